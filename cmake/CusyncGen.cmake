# cusync_generate_policies(TARGET name SPEC file OUTPUT header [NAMESPACE ns])
#
# Generates `header` from the cusync spec `file` with cusyncgen at build time
# and makes `name` depend on it: the header's directory is added to the
# target's include path, and the target is rebuilt when the spec changes.
# Works in cusync's own build, in a project that adds cusync with
# add_subdirectory(), and after find_package(cusync): it runs the
# cusync::cusyncgen executable of whichever of these defined it.
function(cusync_generate_policies)
  cmake_parse_arguments(GEN "" "TARGET;SPEC;OUTPUT;NAMESPACE" "" ${ARGN})
  if(NOT GEN_TARGET OR NOT GEN_SPEC OR NOT GEN_OUTPUT)
    message(FATAL_ERROR "cusync_generate_policies needs TARGET, SPEC and OUTPUT")
  endif()
  if(NOT TARGET cusync::cusyncgen)
    message(FATAL_ERROR "cusync_generate_policies: no cusync::cusyncgen here; add cusync with find_package(cusync) "
                        "or add_subdirectory() first")
  endif()
  get_filename_component(spec "${GEN_SPEC}" ABSOLUTE)
  if(IS_ABSOLUTE "${GEN_OUTPUT}")
    set(out "${GEN_OUTPUT}")
  else()
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${GEN_OUTPUT}")
  endif()
  set(ns_args "")
  if(GEN_NAMESPACE)
    set(ns_args --namespace ${GEN_NAMESPACE})
  endif()
  # A tool built here is a target to depend on; an installed one is a file.
  get_target_property(tool cusync::cusyncgen ALIASED_TARGET)
  if(NOT tool)
    set(tool "$<TARGET_FILE:cusync::cusyncgen>")
  endif()
  get_filename_component(out_dir "${out}" DIRECTORY)
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
    COMMAND "$<TARGET_FILE:cusync::cusyncgen>" "${spec}" -o "${out}" ${ns_args}
    DEPENDS ${tool} "${spec}"
    COMMENT "cusyncgen: ${GEN_SPEC} -> ${GEN_OUTPUT}"
    VERBATIM)
  string(MAKE_C_IDENTIFIER "${out}" gen_name)
  add_custom_target(cusyncgen_${gen_name} DEPENDS "${out}")
  add_dependencies(${GEN_TARGET} cusyncgen_${gen_name})
  target_sources(${GEN_TARGET} PRIVATE "${out}")
  target_include_directories(${GEN_TARGET} PRIVATE "${out_dir}")
endfunction()
