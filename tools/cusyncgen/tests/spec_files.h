// The text of a workload spec in specs/ (CUSYNC_SPEC_DIR), empty if absent.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

inline std::string readSpec(const std::string& name) {
  std::ifstream f(std::string(CUSYNC_SPEC_DIR) + "/" + name + ".cusync");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
