# The cusync package: `cmake --install` puts the libraries, their headers,
# cusyncgen and cusync_generate_policies() under the prefix, and
# find_package(cusync) there gives the same targets as this build:
#
#   cusync::cusync      the header library (core, policies, CPU emulator)
#   cusync::gemm        the Hopper GEMM (sm_90a kernels), kernels/gemm/gemm.h
#   cusync::gemm_host   the GEMM's host API only (heuristic, checkArgs), no kernels
#   cusync::baseline    the cuBLASLt GEMM the benchmarks compare with, kernels/baseline/cublaslt_gemm.h
#   cusync::mlp         the MLP pipelines, kernels/mlp/mlp.h
#   cusync::conv        conv2d on the GEMM kernel and conv pairs, kernels/conv/conv.h, kernels/conv/chain.h
#   cusync::conv_host   the convolution's host API only (checkArgs, convConfig, chain_plan.h), no kernels
#   cusync::cusyncgen   the spec compiler, run by cusync_generate_policies()
include(CMakePackageConfigHelpers)

set(CUSYNC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/cusync)

install(TARGETS cusync cusync_gemm cusync_gemm_host cusync_baseline cusync_mlp cusync_conv_host cusync_conv
        cusyncgen EXPORT cusyncTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/cusync DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Kernel headers by pattern, so that files may come and go under kernels/.
install(DIRECTORY kernels/ DESTINATION ${CUSYNC_KERNELS_INCLUDEDIR}/kernels
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh"
        PATTERN "tests" EXCLUDE PATTERN "testing" EXCLUDE PATTERN "tools" EXCLUDE PATTERN "results" EXCLUDE)
install(EXPORT cusyncTargets NAMESPACE cusync:: DESTINATION ${CUSYNC_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/cusyncConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/cusyncConfig.cmake
                              INSTALL_DESTINATION ${CUSYNC_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cusyncConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cusyncConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/cusyncConfigVersion.cmake
              cmake/CusyncGen.cmake
        DESTINATION ${CUSYNC_INSTALL_CMAKEDIR})
