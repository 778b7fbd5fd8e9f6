# The header-only libraries the command-line programs are built with:
# CLI11 (every command line) and nlohmann/json (JSON output), from Debian's
# packages libcli11-dev and nlohmann-json3-dev (scripts/install-deps).
# Where they are not installed, a copy unpacked into .deps/ by
# scripts/fetch-deps is used: a build machine without network or root gets
# that folder from a machine with apt.
set(CUSYNC_DEPS_PREFIX "${PROJECT_SOURCE_DIR}/.deps/usr")

set(missing "")
foreach(dep "CLI11;2.1;CLI11;libcli11-dev" "nlohmann_json;3.10;nlohmann/json;nlohmann-json3-dev")
  list(GET dep 0 name)
  list(GET dep 1 version)
  find_package(${name} ${version} CONFIG QUIET)
  if(NOT ${name}_FOUND AND EXISTS "${CUSYNC_DEPS_PREFIX}")
    find_package(${name} ${version} CONFIG QUIET PATHS "${CUSYNC_DEPS_PREFIX}" NO_DEFAULT_PATH)
  endif()
  if(NOT ${name}_FOUND)
    list(GET dep 2 title)
    list(GET dep 3 package)
    list(APPEND missing "${title} ${version}+ (Debian: ${package})")
  endif()
endforeach()
if(missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR
    "cusync: missing ${missing}. Install with\n"
    "  scripts/install-deps     (apt-get install -y libcli11-dev nlohmann-json3-dev python3-matplotlib)\n"
    "or, on a machine without network or root, run scripts/fetch-deps on a machine where apt works and copy "
    "the .deps folder it writes into ${PROJECT_SOURCE_DIR}; it is found there automatically.")
endif()

# What the command-line programs share on top of CLI11 (tools/cli/cusync_cli.h).
add_library(cusync_cli INTERFACE)
target_include_directories(cusync_cli INTERFACE ${PROJECT_SOURCE_DIR}/tools/cli)
target_link_libraries(cusync_cli INTERFACE CLI11::CLI11)
