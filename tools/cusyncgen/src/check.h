// cusyncgen --check: shows for every consumer tile that the derived policies
// (a) wait on every producer tile before it is read, (b) wait on nothing the
// chosen granularity does not imply, and (c) with the derived tile orders,
// run to the end on the CPU emulator with N SMs.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "model.h"

namespace cusyncgen {

struct CheckOptions {
  uint32_t sms = 8;
  bool emulate = true;
  // The check gives up, undecided, at `deadline` (cusyncgen --timeout);
  // progress lines count from `start`.
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::ostream* progress = nullptr;  // progress lines of long checks
  // The emulator tabulates the tiles each step reads while the table has at
  // most this many entries (consumer tiles x steps, about 200 MB); beyond,
  // it reads the spec's maps at each step.
  size_t tabulateUpTo = size_t(1) << 23;
};

struct CheckResult {
  bool ok = true;
  bool timedOut = false;           // ran out of time before finding a problem or finishing: undecided
  std::vector<std::string> lines;  // what was shown, one line per edge or run
  std::string counterexample;      // the first failure, empty when ok; where it stopped when timedOut
};

CheckResult check(const Model& m, const CheckOptions& opts);

// Parts of check(), for tests.
CheckResult checkWaits(const Model& m, const CheckOptions& opts = {});
CheckResult checkEmulated(const Model& m, const CheckOptions& opts);
inline CheckResult checkEmulated(const Model& m, uint32_t sms) {
  CheckOptions o;
  o.sms = sms;
  return checkEmulated(m, o);
}

}  // namespace cusyncgen
