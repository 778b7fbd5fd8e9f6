// NoSync: the stage neither waits on a producer nor signals a consumer. A
// stage whose input (output) policy is NoSync compiles its wait (post) away.
#pragma once

#include "cusync/geometry.h"

namespace cusync::policy {

struct NoSync {
  static constexpr const char* kName = "NoSync";
  static constexpr bool kIsNoSync = true;
  static constexpr bool kSingleWriter = true;

  CUSYNC_HD uint32_t semaphoreCount(const StageShape&) const { return 0; }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const Dim3&, const StageShape&) const { return 0; }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 0; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape&) const { return 0; }
  CUSYNC_HD SemSpan waitSpan(const Read&, const StageShape&, const StageShape&) const { return {}; }
  CUSYNC_HD bool isSync(const Read&, const StageShape&, const StageShape&) const { return false; }
  const char* checkPair(const StageShape&, const StageShape&) const { return nullptr; }
};

template <class P, class = void>
struct IsNoSyncImpl {
  static constexpr bool value = false;
};
template <class P>
struct IsNoSyncImpl<P, decltype(void(P::kIsNoSync))> {
  static constexpr bool value = P::kIsNoSync;
};
template <class P>
constexpr bool isNoSync = IsNoSyncImpl<P>::value;

}  // namespace cusync::policy
