# cusync_add_cli_test(NAME name CODE status [STDERR regex] [STDOUT regex] [ENV VAR=VALUE...] COMMAND cmd args...)
#
# A test of a command line: passes when the command exits with CODE and its
# output matches (tests/cli/expect.cmake). Labeled cpu: nothing here runs on
# a GPU.
function(cusync_add_cli_test)
  cmake_parse_arguments(T "" "NAME;CODE;STDERR;STDOUT" "ENV;COMMAND" ${ARGN})
  set(match "")
  foreach(stream STDERR STDOUT)
    if(DEFINED T_${stream})
      list(APPEND match "-D${stream}=${T_${stream}}")
    endif()
  endforeach()
  add_test(NAME ${T_NAME}
           COMMAND ${CMAKE_COMMAND} -DCODE=${T_CODE} ${match} -P ${PROJECT_SOURCE_DIR}/tests/cli/expect.cmake
                   -- ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS cpu TIMEOUT 150)
  if(T_ENV)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()
