#include "truth.h"

#include <algorithm>

namespace cusyncgen {

uint32_t walkSteps(const StageDecl& s) {
  uint64_t n = 1;
  for (const WalkVar& w : s.walk) n *= uint64_t(w.extent);
  return uint32_t(n);
}

ReadMap::ReadMap(const Model& m, const Edge& e) {
  const StageDecl& s = m.spec.stages[e.cons];
  const StageDecl& p = m.spec.stages[e.prod];
  const TensorDecl& t = m.spec.tensors[e.tensor];
  vars_ = {"i", "j"};
  for (const WalkVar& w : s.walk) {
    vars_.push_back(w.name);
    extents_.push_back(w.extent);
  }
  for (int r : e.reads) {
    const Access& a = s.reads[r];
    reads_.push_back({compile(a.rows.lo), compile(a.rows.hi), compile(a.cols.lo), compile(a.cols.hi)});
  }
  rowLimit_ = std::min(t.rows, p.grid[1] * p.tile[1]);
  colLimit_ = std::min(t.cols, p.grid[0] * p.tile[0]);
  tileRows_ = p.tile[1];
  tileCols_ = p.tile[0];
}

ReadMap::Linear ReadMap::compile(const Affine& a) const {
  Linear l;
  l.c = a.c;
  for (const auto& [name, k] : a.coef)
    l.terms.emplace_back(size_t(std::find(vars_.begin(), vars_.end(), name) - vars_.begin()), k);
  return l;
}

// analyze() bounded every read's ends over all tiles and steps without
// overflow, and partial sums stay within those bounds.
int64_t ReadMap::Linear::at(const std::vector<int64_t>& value) const {
  int64_t v = c;
  for (const auto& [var, k] : terms) v += k * value[var];
  return v;
}

namespace {

// Tiles of `size` along an axis that [lo, hi) overlaps within [0, limit).
std::pair<int64_t, int64_t> tileSpan(int64_t lo, int64_t hi, int64_t limit, int64_t size) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, limit);
  if (lo >= hi) return {1, 0};
  return {lo / size, (hi - 1) / size};
}

}  // namespace

void ReadMap::read(uint32_t x, uint32_t y, uint32_t z, uint32_t local, std::vector<cusync::Dim3>& out) const {
  std::vector<int64_t> value(vars_.size());
  value[0] = y;
  value[1] = x;
  uint64_t rest = local;
  for (size_t w = extents_.size(); w-- > 0;) {  // innermost loop varies fastest
    value[2 + w] = int64_t(rest % uint64_t(extents_[w]));
    rest /= uint64_t(extents_[w]);
  }
  for (const Block& b : reads_) {
    const auto rows = tileSpan(b.rowLo.at(value), b.rowHi.at(value), rowLimit_, tileRows_);
    const auto cols = tileSpan(b.colLo.at(value), b.colHi.at(value), colLimit_, tileCols_);
    for (int64_t ty = rows.first; ty <= rows.second; ++ty)
      for (int64_t tx = cols.first; tx <= cols.second; ++tx) out.emplace_back(uint32_t(tx), uint32_t(ty), z);
  }
}

std::vector<cusync::Dim3> tilesRead(const Model& m, const Edge& e, uint32_t x, uint32_t y, uint32_t z, uint32_t local) {
  std::vector<cusync::Dim3> out;
  ReadMap(m, e).read(x, y, z, local, out);
  return out;
}

}  // namespace cusyncgen
