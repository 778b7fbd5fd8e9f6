// Which compilation pass may use sm_90a instructions (wgmma, setmaxnreg).
#pragma once

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUSYNC_GEMM_SM90A 1
#else
#define CUSYNC_GEMM_SM90A 0
#endif
