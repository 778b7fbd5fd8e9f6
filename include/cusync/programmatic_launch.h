// The launch attribute of a programmatic dependent launch, for host code
// with or without the CUDA compiler (launch.h, the kernels' own launches).
#pragma once

#include <cuda_runtime_api.h>

namespace cusync {

// The attribute that makes a kernel a programmatic dependent of the grids
// before it in its stream: its blocks may be placed during their tail, and
// the kernel waits for them (griddepcontrol.wait) before reading their output.
inline cudaLaunchAttribute programmaticDependentLaunch() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

}  // namespace cusync
