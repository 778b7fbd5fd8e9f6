# The header-only libraries the command-line programs are built with:
# CLI11 (every command line) and nlohmann/json (JSON output), from Debian's
# packages libcli11-dev and nlohmann-json3-dev (scripts/install-deps).
# Where they are not installed, a copy unpacked into .deps/ by
# scripts/fetch-deps is used: a build machine without network or root gets
# that folder from a machine with apt.
set(CUSYNC_DEPS_PREFIX "${PROJECT_SOURCE_DIR}/.deps/usr")

foreach(dep "CLI11;2.1" "nlohmann_json;3.10")
  list(GET dep 0 name)
  list(GET dep 1 version)
  find_package(${name} ${version} CONFIG QUIET)
  if(NOT ${name}_FOUND AND EXISTS "${CUSYNC_DEPS_PREFIX}")
    find_package(${name} ${version} CONFIG QUIET PATHS "${CUSYNC_DEPS_PREFIX}" NO_DEFAULT_PATH)
  endif()
endforeach()

set(missing "")
if(NOT CLI11_FOUND)
  list(APPEND missing "CLI11 2.1+ (Debian: libcli11-dev)")
endif()
if(NOT nlohmann_json_FOUND)
  list(APPEND missing "nlohmann/json 3.10+ (Debian: nlohmann-json3-dev)")
endif()
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
