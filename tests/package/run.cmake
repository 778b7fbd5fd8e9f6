# cmake -DMODE=find_package|add_subdirectory -DCUSYNC_SOURCE_DIR=... -DCUSYNC_BUILD_DIR=... -DWORK=...
#       -DGENERATOR=... -DCXX=... -DCUDA=... -P run.cmake
#
# Builds and runs tests/package/consumer against cusync: find_package installs
# the build in CUSYNC_BUILD_DIR under WORK/prefix first and finds it there;
# add_subdirectory adds CUSYNC_SOURCE_DIR to the consumer's build.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message("${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
set(consumer "${CUSYNC_SOURCE_DIR}/tests/package/consumer")
set(args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
if(MODE STREQUAL "find_package")
  step("install" ${CMAKE_COMMAND} --install "${CUSYNC_BUILD_DIR}" --prefix "${WORK}/prefix")
  list(APPEND args -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  get_filename_component(cuda_bin "${CUDA}" DIRECTORY)
  get_filename_component(cuda_root "${cuda_bin}" DIRECTORY)
  list(APPEND args -DCUDAToolkit_ROOT=${cuda_root})
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND args -DCUSYNC_SOURCE_DIR=${CUSYNC_SOURCE_DIR} -DCMAKE_CUDA_COMPILER=${CUDA})
else()
  message(FATAL_ERROR "MODE must be find_package or add_subdirectory")
endif()
step("configure (${MODE})" ${CMAKE_COMMAND} -S "${consumer}" -B "${WORK}/build" ${args})
step("build" ${CMAKE_COMMAND} --build "${WORK}/build" -j 2)
step("run" "${WORK}/build/consumer")
if(NOT step_output MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer did not report ok:\n${step_output}")
endif()
message("${step_output}")
