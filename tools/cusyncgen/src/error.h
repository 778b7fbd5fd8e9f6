// Errors in a spec: a message with the line and column it refers to, printed
// the way compilers print theirs (file:line:col: error: ...).
#pragma once

#include <stdexcept>
#include <string>

#include "spec.h"

namespace cusyncgen {

class SpecError : public std::runtime_error {
 public:
  SpecError(Loc loc, const std::string& msg) : std::runtime_error(msg), loc_(loc) {}
  Loc loc() const { return loc_; }
  std::string format(const std::string& file) const {
    return file + ":" + std::to_string(loc_.line) + ":" + std::to_string(loc_.col) + ": error: " + what();
  }

 private:
  Loc loc_;
};

}  // namespace cusyncgen
