// How the benchmarks tell a hung GPU from a slow one, apart from the CUDA
// calls so that CPU tests pin it down. A kernel that never finishes cannot
// be stopped from the host, and cudaStreamSynchronize would wait for it
// forever; the benchmarks instead poll the stream and, past a limit no
// healthy run comes near (one synchronization covers at most a few seconds
// of GPU work), name what hangs and exit, which ends the kernel with the
// process's context.
#pragma once

#include <chrono>
#include <cstddef>
#include <thread>

namespace bench {

// Seconds a stream may take to drain before the benchmark calls it a hang
// (cusync-bench --hang-timeout).
inline int& hangLimitSeconds() {
  static int seconds = 60;
  return seconds;
}

// Polls done() until it returns true (then true) or until `limit` has passed
// (then false), pausing `pause` between polls. done() is called at least
// once, so a zero limit still reports work that is already finished.
template <class Done, class Clock = std::chrono::steady_clock>
bool pollUntil(Done&& done, std::chrono::milliseconds limit,
               std::chrono::microseconds pause = std::chrono::microseconds(100)) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
  }
}

// In a sequence of `runs` runs where run j ends at marker j + 1 (marker 0
// is recorded before the first run), the first run whose end marker has not
// been reached: the one that hangs, since a stream runs its work in order.
// `runs` where every marker was reached.
template <class Reached>
size_t firstUnfinishedRun(size_t runs, Reached&& reached) {
  for (size_t j = 0; j < runs; ++j)
    if (!reached(j + 1)) return j;
  return runs;
}

}  // namespace bench
