// Host-side errors. Every failure of the host API is a cusync::Error whose
// message names the stage and the problem; code() lets a caller branch on it.
#pragma once

#include <stdexcept>
#include <string>

namespace cusync {

enum class ErrorCode {
  InvalidArgument,
  UnpairedStage,
  PolicyMismatch,
  GridMismatch,
  OrderNotBijection,
  SemaphoreArrayTooSmall,
  LaunchModeUnsupported,
  CudaError,
  Deadlock,
};

inline const char* toString(ErrorCode c) {
  switch (c) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::UnpairedStage: return "unpaired stage";
    case ErrorCode::PolicyMismatch: return "policy mismatch";
    case ErrorCode::GridMismatch: return "grid mismatch";
    case ErrorCode::OrderNotBijection: return "order is not a bijection";
    case ErrorCode::SemaphoreArrayTooSmall: return "semaphore array too small";
    case ErrorCode::LaunchModeUnsupported: return "launch mode not supported";
    case ErrorCode::CudaError: return "CUDA error";
    case ErrorCode::Deadlock: return "deadlock";
  }
  return "unknown";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& stage, const std::string& what)
      : std::runtime_error("cusync: " + (stage.empty() ? std::string() : "stage '" + stage + "': ") +
                           toString(code) + ": " + what),
        code_(code),
        stage_(stage) {}
  ErrorCode code() const { return code_; }
  const std::string& stage() const { return stage_; }

 private:
  ErrorCode code_;
  std::string stage_;
};

}  // namespace cusync
