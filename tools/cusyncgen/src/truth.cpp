#include "truth.h"

#include <algorithm>

namespace cusyncgen {

uint32_t walkSteps(const StageDecl& s) {
  uint64_t n = 1;
  for (const WalkVar& w : s.walk) n *= uint64_t(w.extent);
  return uint32_t(n);
}

namespace {

int64_t eval(const Affine& a, const std::map<std::string, int64_t>& vals) {
  int64_t v = a.c;
  for (const auto& [name, k] : a.coef) v += k * vals.at(name);
  return v;
}

// Tiles of `size` along an axis that [lo, hi) overlaps within [0, limit).
std::pair<int64_t, int64_t> tileSpan(int64_t lo, int64_t hi, int64_t limit, int64_t size) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, limit);
  if (lo >= hi) return {1, 0};
  return {lo / size, (hi - 1) / size};
}

}  // namespace

std::vector<cusync::Dim3> tilesRead(const Model& m, const Edge& e, uint32_t x, uint32_t y, uint32_t z, uint32_t local) {
  const StageDecl& s = m.spec.stages[e.cons];
  const StageDecl& p = m.spec.stages[e.prod];
  const TensorDecl& t = m.spec.tensors[e.tensor];
  std::map<std::string, int64_t> vals{{"i", y}, {"j", x}};
  uint32_t rest = local;
  for (size_t w = s.walk.size(); w-- > 0;) {  // innermost loop varies fastest
    vals[s.walk[w].name] = rest % s.walk[w].extent;
    rest /= uint32_t(s.walk[w].extent);
  }
  const int64_t rowLimit = std::min(t.rows, p.grid[1] * p.tile[1]);
  const int64_t colLimit = std::min(t.cols, p.grid[0] * p.tile[0]);
  std::vector<cusync::Dim3> out;
  for (int r : e.reads) {
    const Access& a = s.reads[r];
    const auto rows = tileSpan(eval(a.rows.lo, vals), eval(a.rows.hi, vals), rowLimit, p.tile[1]);
    const auto cols = tileSpan(eval(a.cols.lo, vals), eval(a.cols.hi, vals), colLimit, p.tile[0]);
    for (int64_t ty = rows.first; ty <= rows.second; ++ty)
      for (int64_t tx = cols.first; tx <= cols.second; ++tx) out.emplace_back(uint32_t(tx), uint32_t(ty), z);
  }
  return out;
}

}  // namespace cusyncgen
