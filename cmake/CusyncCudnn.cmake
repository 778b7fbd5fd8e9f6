# cuDNN, for the convolution baseline of `cusync-bench conv`
# (kernels/baseline/cudnn_conv.h). Optional: without it the baseline library
# is not built and the bench skips its cuDNN rows.
#
# CUSYNC_CUDNN_ROOT: a folder with include/cudnn.h and lib/ or lib64/
# libcudnn.so; only that folder is searched. Empty (the default): the CUDA
# toolkit's folders, then the folder of python3's pip package nvidia.cudnn,
# then the system's default paths.
#
# Defines the imported target cusync::cudnn_lib and CUSYNC_CUDNN_FOUND.
set(CUSYNC_CUDNN_ROOT "" CACHE PATH "cuDNN install folder (include/cudnn.h, lib/libcudnn.so); empty: search for it")

set(CUSYNC_CUDNN_FOUND FALSE)
# A new root: search again rather than keep what an earlier configure found.
if(NOT "${CUSYNC_CUDNN_ROOT}" STREQUAL "${CUSYNC_CUDNN_ROOT_USED}")
  unset(CUSYNC_CUDNN_INCLUDE_DIR CACHE)
  unset(CUSYNC_CUDNN_LIBRARY CACHE)
  set(CUSYNC_CUDNN_ROOT_USED "${CUSYNC_CUDNN_ROOT}" CACHE INTERNAL "CUSYNC_CUDNN_ROOT of the last search")
endif()
# The pip wheels ship only the versioned library (libcudnn.so.9).
set(cudnn_names cudnn libcudnn.so.9 libcudnn.so.8)

function(cusync_find_cudnn_in include_hints lib_hints)
  if(CUSYNC_CUDNN_INCLUDE_DIR AND CUSYNC_CUDNN_LIBRARY)
    return()
  endif()
  unset(CUSYNC_CUDNN_INCLUDE_DIR CACHE)
  unset(CUSYNC_CUDNN_LIBRARY CACHE)
  find_path(CUSYNC_CUDNN_INCLUDE_DIR cudnn.h HINTS ${include_hints} NO_DEFAULT_PATH)
  find_library(CUSYNC_CUDNN_LIBRARY NAMES ${cudnn_names} HINTS ${lib_hints} NO_DEFAULT_PATH)
endfunction()

if(CUSYNC_CUDNN_ROOT)
  set(where "${CUSYNC_CUDNN_ROOT}")
  cusync_find_cudnn_in("${CUSYNC_CUDNN_ROOT}/include" "${CUSYNC_CUDNN_ROOT}/lib;${CUSYNC_CUDNN_ROOT}/lib64")
else()
  set(where "the CUDA toolkit, python3's nvidia.cudnn or the system paths")
  # 1. The CUDA toolkit's folders (cuDNN copied into the toolkit, as on NVIDIA's images).
  set(tk_inc ${CUDAToolkit_INCLUDE_DIRS})
  set(tk_lib ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  cusync_find_cudnn_in("${tk_inc}" "${tk_lib}")
  # 2. The pip package nvidia-cudnn-cu*, where python3 has it.
  if(NOT (CUSYNC_CUDNN_INCLUDE_DIR AND CUSYNC_CUDNN_LIBRARY))
    find_program(CUSYNC_CUDNN_PYTHON3 python3)
    if(CUSYNC_CUDNN_PYTHON3)
      execute_process(
        COMMAND ${CUSYNC_CUDNN_PYTHON3} -c
                "import nvidia.cudnn as m, os; print(os.path.dirname(m.__file__) if m.__file__ else list(m.__path__)[0])"
        OUTPUT_VARIABLE pip_cudnn OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 60)
      if(rc EQUAL 0 AND IS_DIRECTORY "${pip_cudnn}")
        cusync_find_cudnn_in("${pip_cudnn}/include" "${pip_cudnn}/lib")
      endif()
    endif()
  endif()
  # 3. The system's default paths (Debian's cuDNN packages, /usr/local).
  if(NOT (CUSYNC_CUDNN_INCLUDE_DIR AND CUSYNC_CUDNN_LIBRARY))
    unset(CUSYNC_CUDNN_INCLUDE_DIR CACHE)
    unset(CUSYNC_CUDNN_LIBRARY CACHE)
    find_path(CUSYNC_CUDNN_INCLUDE_DIR cudnn.h)
    find_library(CUSYNC_CUDNN_LIBRARY NAMES ${cudnn_names})
  endif()
endif()

if(CUSYNC_CUDNN_INCLUDE_DIR AND CUSYNC_CUDNN_LIBRARY)
  # The version: 8 or later has the bf16 NHWC convolutions the baseline runs.
  set(cudnn_major 0)
  foreach(h cudnn_version.h cudnn.h)
    if(EXISTS "${CUSYNC_CUDNN_INCLUDE_DIR}/${h}")
      file(STRINGS "${CUSYNC_CUDNN_INCLUDE_DIR}/${h}" lines REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
      foreach(part MAJOR MINOR PATCHLEVEL)
        string(REGEX MATCH "CUDNN_${part} +([0-9]+)" m "${lines}")
        set(cudnn_${part} "${CMAKE_MATCH_1}")
      endforeach()
      if(cudnn_MAJOR)
        set(cudnn_major ${cudnn_MAJOR})
        break()
      endif()
    endif()
  endforeach()
  if(cudnn_major GREATER_EQUAL 8)
    set(CUSYNC_CUDNN_FOUND TRUE)
    set(CUSYNC_CUDNN_VERSION "${cudnn_MAJOR}.${cudnn_MINOR}.${cudnn_PATCHLEVEL}")
    if(NOT TARGET cusync::cudnn_lib)
      add_library(cusync::cudnn_lib UNKNOWN IMPORTED)
      set_target_properties(cusync::cudnn_lib PROPERTIES IMPORTED_LOCATION "${CUSYNC_CUDNN_LIBRARY}"
                                                        INTERFACE_INCLUDE_DIRECTORIES "${CUSYNC_CUDNN_INCLUDE_DIR}")
    endif()
    message(STATUS "cusync: cuDNN ${CUSYNC_CUDNN_VERSION} found (${CUSYNC_CUDNN_LIBRARY}): cusync-bench conv has its cuDNN rows")
  else()
    message(STATUS "cusync: cuDNN at ${CUSYNC_CUDNN_INCLUDE_DIR} is older than 8 or has no version: the cuDNN conv baseline is not built")
  endif()
else()
  if(NOT CUSYNC_CUDNN_ROOT)
    string(APPEND where " (CUSYNC_CUDNN_ROOT names another folder)")
  endif()
  message(STATUS "cusync: cuDNN not found in ${where}: the cuDNN conv baseline is not built")
endif()
