// Progress and the time limit of a long --check (a large M runs millions of
// consumer tiles): silent for the first seconds, then a line every few
// seconds saying what is being checked and how far it got.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace cusyncgen {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // Lines go to `out` (none if null), timed from `start`; the check stops at `deadline`.
  Progress(std::ostream* out, Clock::time_point start, Clock::time_point deadline)
      : out_(out), deadline_(deadline), start_(start), next_(start + kQuiet) {}

  // Prints line() when a line is due; returns whether the deadline has passed.
  template <class F>
  bool tick(F&& line) {
    const Clock::time_point now = Clock::now();
    if (out_ && now >= next_) {
      *out_ << "cusyncgen: " << line() << " (" << int(seconds()) << " s)" << std::endl;
      next_ = now + kEvery;
    }
    return now >= deadline_;
  }

  bool pastDeadline() const { return Clock::now() >= deadline_; }
  Clock::duration remaining() const { return deadline_ - Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  static constexpr Clock::duration kQuiet = std::chrono::seconds(2), kEvery = std::chrono::seconds(5);
  std::ostream* out_;
  Clock::time_point deadline_, start_, next_;
};

}  // namespace cusyncgen
