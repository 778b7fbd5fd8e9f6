# cmake -DREADME=README.md -DOUT=dir -DNVCC=nvcc -DINCLUDES="dir|dir" -P snippet.cmake
#
# Compiles the README's usage snippet (the first ```cpp block after
# "## Use it in your own kernel") as written, with every warning an error.
file(READ "${README}" text)
string(FIND "${text}" "## Use it in your own kernel" at)
if(at LESS 0)
  message(FATAL_ERROR "README has no section '## Use it in your own kernel'")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "```cpp\n" begin)
if(begin LESS 0)
  message(FATAL_ERROR "no ```cpp block in the README's usage section")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${text}" ${begin} -1 text)
string(FIND "${text}" "```" end)
string(SUBSTRING "${text}" 0 ${end} snippet)
file(MAKE_DIRECTORY "${OUT}")
file(WRITE "${OUT}/snippet.cu" "${snippet}")
string(REPLACE "|" ";" includes "${INCLUDES}")
set(flags "")
foreach(dir ${includes})
  list(APPEND flags -I${dir})
endforeach()
execute_process(
  COMMAND ${NVCC} -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Werror all-warnings
          -Xcompiler=-Wall,-Wextra,-Werror ${flags} -c "${OUT}/snippet.cu" -o "${OUT}/snippet.o"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${err}" STREQUAL "")
  message(FATAL_ERROR "the README snippet (${OUT}/snippet.cu) does not compile cleanly (${rc}):\n${out}\n${err}")
endif()
message("README snippet: compiles without warnings")
