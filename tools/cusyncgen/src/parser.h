// Parses the text of a spec into a Spec: syntax, names and constant folding.
// Shapes and the meaning of the accesses are checked later (analyze.h).
#pragma once

#include <map>
#include <string>

#include "spec.h"

namespace cusyncgen {

// Throws SpecError at the first problem. `overrides` replace the values of
// params of the same name (cusyncgen --set M=64).
Spec parseSpec(const std::string& text, const std::string& file = "<spec>",
               const std::map<std::string, int64_t>& overrides = {});

}  // namespace cusyncgen
