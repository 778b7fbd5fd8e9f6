// cusyncgen --check: shows for every consumer tile that the derived policies
// (a) wait on every producer tile before it is read, (b) wait on nothing the
// chosen granularity does not imply, and (c) with the derived tile orders,
// run to the end on the CPU emulator with N SMs.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace cusyncgen {

struct CheckOptions {
  uint32_t sms = 8;
  bool emulate = true;
};

struct CheckResult {
  bool ok = true;
  std::vector<std::string> lines;  // what was shown, one line per edge or run
  std::string counterexample;      // the first failure, empty when ok
};

CheckResult check(const Model& m, const CheckOptions& opts);

// Parts of check(), for tests.
CheckResult checkWaits(const Model& m);
CheckResult checkEmulated(const Model& m, uint32_t sms);

}  // namespace cusyncgen
