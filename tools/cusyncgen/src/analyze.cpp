// Semantic checks of a spec and the derivation of policy rules. Each check
// names the line and column of the construct at fault.
#include <algorithm>
#include <climits>
#include <map>

#include "checked.h"
#include "error.h"
#include "model.h"
#include "parser.h"

namespace cusyncgen {
namespace {

using Extents = std::map<std::string, int64_t>;  // index variable -> its count

// Smallest and largest value of `a` over variables in [0, extent).
std::pair<int64_t, int64_t> bounds(const Affine& a, const Extents& ext, Loc at) {
  int64_t lo = a.c, hi = a.c;
  for (const auto& [v, k] : a.coef) {
    auto it = ext.find(v);
    const int64_t last = it == ext.end() ? 0 : checkedMul(k, it->second - 1, at);
    lo = checkedAdd(lo, std::min<int64_t>(0, last), at);
    hi = checkedAdd(hi, std::max<int64_t>(0, last), at);
  }
  return {lo, hi};
}

Affine minus(Affine a, const Affine& b, Loc at) {
  a.c = checkedSub(a.c, b.c, at);
  for (const auto& [v, k] : b.coef) {
    a.coef[v] = checkedSub(a.coef[v], k, at);
    if (a.coef[v] == 0) a.coef.erase(v);
  }
  return a;
}

Affine without(Affine a, const std::string& v) {
  a.coef.erase(v);
  return a;
}

bool sameAffine(const Affine& a, const Affine& b) { return a.c == b.c && a.coef == b.coef; }

std::string str(int64_t v) { return std::to_string(v); }

int32_t small(int64_t v, Loc loc) {
  if (v < INT_MIN || v > INT_MAX) throw SpecError(loc, "value " + str(v) + " does not fit the 32-bit policy constants");
  return int32_t(v);
}

// The constant length of a range, which must be positive.
int64_t lengthOf(const Range& r, const char* axis) {
  const Affine len = minus(r.hi, r.lo, r.loc);
  if (!len.isConstant())
    throw SpecError(r.loc, std::string("the length of the ") + axis + " range must be a constant (it depends on '" +
                               len.coef.begin()->first + "')");
  if (len.c <= 0) throw SpecError(r.loc, std::string("empty ") + axis + " range (length " + str(len.c) + ")");
  return len.c;
}

// A write map must be the tile's own block: [var*size : (var+1)*size).
void checkWriteAxis(const Range& r, const char* var, int64_t size, const char* axis) {
  const int64_t len = lengthOf(r, axis);
  if (len != size)
    throw SpecError(r.loc, std::string("shape mismatch: the tile writes ") + str(len) + " " + axis + " but has " +
                               str(size) + " " + axis);
  if (r.lo.c != 0 || r.lo.coef.size() != 1 || r.lo.at(var) != size)
    throw SpecError(r.loc, std::string("write map must be the tile's own block: ") + axis + " " + var + "*" +
                               str(size) + " : (" + var + "+1)*" + str(size));
}

void checkShapes(const Spec& spec, const StageDecl& s) {
  if (s.output < 0) throw SpecError(s.loc, "stage '" + s.name + "' declares no output");
  const TensorDecl& t = spec.tensors[s.output];
  const char* axes[2] = {"rows", "columns"};
  const int64_t sizes[2] = {t.rows, t.cols};
  for (int a = 0; a < 2; ++a) {
    const int d = a == 0 ? 1 : 0;  // rows are grid.y, columns grid.x
    if (checkedMul(s.grid[d] - 1, s.tile[d], s.gridLoc) >= sizes[a])
      throw SpecError(s.gridLoc, "shape mismatch: " + str(s.grid[d]) + " tiles of " + str(s.tile[d]) + " " + axes[a] +
                                     " overshoot the " + str(sizes[a]) + " " + axes[a] + " of '" + t.name +
                                     "' by a whole tile");
  }
  if (!s.hasWrites) throw SpecError(s.loc, "stage '" + s.name + "' has no writes line");
  if (s.writes.tensor != t.name)
    throw SpecError(s.writes.loc, "stage '" + s.name + "' writes '" + s.writes.tensor + "' but its output is '" +
                                      t.name + "'");
  checkWriteAxis(s.writes.rows, "i", s.tile[1], "rows");
  checkWriteAxis(s.writes.cols, "j", s.tile[0], "columns");
}

// cusyncgen's own limits: shapes that the core's 32-bit geometry holds, and
// few enough tiles per stage that --check's tables fit in memory.
constexpr int64_t kMaxTiles = int64_t(1) << 24;

void checkLimits(const StageDecl& s) {
  int64_t tiles = 1;
  for (int d = 0; d < 3; ++d) {
    if (s.tile[d] > INT32_MAX)
      throw SpecError(s.tileLoc, "tile size " + str(s.tile[d]) + " does not fit the core's 32-bit geometry");
    tiles = s.grid[d] > kMaxTiles ? kMaxTiles + 1 : tiles * s.grid[d];  // at most 2^48: no overflow
    if (tiles > kMaxTiles)
      throw SpecError(s.gridLoc, "stage '" + s.name + "' has more than " + str(kMaxTiles) +
                                     " tiles, the most cusyncgen handles per stage (grid " + str(s.grid[0]) + " x " +
                                     str(s.grid[1]) + " x " + str(s.grid[2]) + ")");
  }
}

Extents extentsOf(const StageDecl& s) {
  Extents e{{"i", s.grid[1]}, {"j", s.grid[0]}};
  for (const WalkVar& w : s.walk) e[w.name] = w.extent;
  return e;
}

// Bounds, coverage by the producer and the affine forms the rules support.
void checkRead(const Spec& spec, int stage, const Access& a) {
  const StageDecl& s = spec.stages[stage];
  const TensorDecl& t = spec.tensors[spec.findTensor(a.tensor)];
  if (t.producer == stage) throw SpecError(a.loc, "stage '" + s.name + "' reads its own output '" + t.name + "'");
  const Range* axes[2] = {&a.rows, &a.cols};
  const char* names[2] = {"rows", "columns"};
  const int64_t sizes[2] = {t.rows, t.cols};
  const Extents ext = extentsOf(s);
  for (int x = 0; x < 2; ++x) {
    const Range& r = *axes[x];
    lengthOf(r, names[x]);
    if (r.lo.uses("j") && x == 0)
      throw SpecError(r.loc, "rows may not depend on j: a consumer's Read carries only its rows and k position");
    const auto [lo, hi] = bounds(r.lo, ext, r.loc);
    bounds(r.hi, ext, r.loc);  // the end too must be computable at every tile and step (tilesRead)
    if (!a.padded && lo < 0)
      throw SpecError(r.loc, std::string("out of bounds: ") + names[x] + " of '" + t.name + "' read from " + str(lo) +
                                 " (mark the read 'padded' if that is padding)");
    if (!a.padded && hi >= sizes[x])
      throw SpecError(r.loc, std::string("out of bounds: ") + names[x] + " of '" + t.name + "' read from " + str(hi) +
                                 ", past its " + str(sizes[x]) + " " + names[x]);
    if (t.producer >= 0) {
      const StageDecl& p = spec.stages[t.producer];
      const int64_t written = x == 0 ? p.grid[1] * p.tile[1] : p.grid[0] * p.tile[0];  // limited in checkLimits
      if (hi >= written && hi < sizes[x])
        throw SpecError(r.loc, std::string("read that no producer writes: ") + names[x] + " from " + str(hi) + " of '" +
                                   t.name + "', but stage '" + p.name + "' writes only " + str(written));
    }
  }
  if (t.producer < 0) return;  // an input tensor: read, never waited for
  if (s.walk.empty())
    throw SpecError(a.loc, "stage '" + s.name + "' reads '" + t.name +
                               "' but declares no walk (add 'walk k < N' before the reads)");
  const std::string& inner = s.walk.back().name;
  for (const auto& [v, k] : a.cols.lo.coef)
    if (v != inner && v != "j")
      throw SpecError(a.cols.loc, "columns may depend only on the innermost walk variable '" + inner + "', not on '" +
                                      v + "'");
  if (a.rows.lo.uses(inner))
    throw SpecError(a.rows.loc, "rows may not depend on the innermost walk variable '" + inner +
                                    "': the walk must move along the producer's columns");
}

Edge makeEdge(const Spec& spec, int stage, int tensor, std::vector<int> reads) {
  const StageDecl& s = spec.stages[stage];
  const TensorDecl& t = spec.tensors[tensor];
  const StageDecl& p = spec.stages[t.producer];
  std::sort(reads.begin(), reads.end(), [&](int a, int b) { return s.reads[a].cols.lo.c < s.reads[b].cols.lo.c; });
  const Access& first = s.reads[reads[0]];
  Edge e;
  e.cons = stage;
  e.prod = t.producer;
  e.tensor = tensor;
  e.reads = reads;
  e.loc = first.loc;
  cusyncgen_rt::Rules& R = e.rules;
  const std::string& inner = s.walk.back().name;
  const int64_t colLen = lengthOf(first.cols, "columns");
  if (colLen != s.tile[2])
    throw SpecError(first.cols.loc, "shape mismatch: a k-block reads " + str(colLen) + " columns but stage '" + s.name +
                                        "' steps k by tile.z = " + str(s.tile[2]));
  const int64_t colA = first.cols.lo.at(inner);
  if (colA < 0) throw SpecError(first.cols.loc, "columns must not move backwards along the walk");
  if (colA > colLen)
    throw SpecError(first.cols.loc, "columns advance by " + str(colA) + " per k-block but a k-block reads " +
                                        str(colLen) + ": the gaps cannot be synchronized");
  R.bk = uint32_t(s.tile[2]);
  R.inner = uint32_t(s.walk.back().extent);
  int64_t steps = 1;
  for (const WalkVar& w : s.walk) steps = checkedMul(steps, w.extent, w.loc);
  if (const int64_t jc = first.cols.lo.at("j")) {
    // Column tile j walks its own slice: the walk starts jc columns further
    // per j, which the kernel passes as Read::walkStart.
    if (s.walk.size() != 1 || colA != colLen || jc < 0 || jc % colA != 0)
      throw SpecError(first.cols.loc, "columns may use j only as an offset of whole k-blocks (j*" + str(colLen) +
                                          "*n) in a walk of one loop");
    e.jSteps = uint32_t(small(jc / colA, first.cols.loc));
    steps = checkedAdd(checkedMul(jc / colA, s.grid[0] - 1, first.cols.loc), s.walk[0].extent, first.cols.loc);
    R.inner = uint32_t(steps);
  }
  R.steps = uint32_t(small(steps, s.walk[0].loc));
  if (checkedMul(steps, s.tile[2], s.walk[0].loc) > INT32_MAX)
    throw SpecError(s.walk[0].loc, "the walk spans " + str(steps) + " k-blocks of " + str(s.tile[2]) +
                                       " columns, more than the 32-bit column position of a Read holds");
  R.colA = small(colA, first.cols.loc);
  R.colB = small(first.cols.lo.c, first.cols.loc);
  R.colLen = uint32_t(colLen);
  // Rows: i's coefficient, and the hull of the rest over the outer loops.
  Extents outer;
  for (size_t w = 0; w + 1 < s.walk.size(); ++w) outer[s.walk[w].name] = s.walk[w].extent;
  const auto [lo, hi] = bounds(without(first.rows.lo, "i"), outer, first.rows.loc);
  R.rowA = small(first.rows.lo.at("i"), first.rows.loc);
  R.rowLo = small(lo, first.rows.loc);
  R.rowHi = small(checkedAdd(hi, lengthOf(first.rows, "rows"), first.rows.loc), first.rows.loc);
  // Several reads of one tensor: the same block at a fixed column stride.
  R.count = uint32_t(reads.size());
  if (reads.size() > 1) {
    const int64_t d = checkedSub(s.reads[reads[1]].cols.lo.c, first.cols.lo.c, s.reads[reads[1]].cols.loc);
    for (size_t m = 1; m < reads.size(); ++m) {
      const Access& a = s.reads[reads[m]];
      if (!sameAffine(a.rows.lo, first.rows.lo) || !sameAffine(a.rows.hi, first.rows.hi) ||
          !minus(a.cols.lo, first.cols.lo, a.cols.loc).isConstant() ||
          lengthOf(a.cols, "columns") != colLen)
        throw SpecError(a.loc, "reads of '" + t.name + "' by stage '" + s.name +
                                   "' must differ only by a column offset (a strided pattern)");
      const int64_t dm = checkedSub(a.cols.lo.c, first.cols.lo.c, a.cols.loc);
      if (dm != checkedMul(int64_t(m), d, a.cols.loc))
        throw SpecError(a.cols.loc, "reads of '" + t.name + "' are not at a fixed column stride (offset " + str(dm) +
                                        ", expected " + str(int64_t(m) * d) + ")");
      if (d == 0 || d % p.tile[0] != 0)
        throw SpecError(a.cols.loc, "the column stride " + str(d) + " between reads of '" + t.name +
                                        "' is not a positive multiple of producer '" + p.name + "''s tile width " +
                                        str(p.tile[0]));
    }
    if (checkedAdd(checkedMul(colA, R.inner - 1, first.cols.loc), colLen, first.cols.loc) > d)
      throw SpecError(first.cols.loc, "the walk's columns run into the next strided read of '" + t.name + "'");
    R.stride = uint32_t(d / p.tile[0]);
  }
  return e;
}

const char* kindName(SyncKind k) {
  switch (k) {
    case SyncKind::Auto: return "auto";
    case SyncKind::Tile: return "tile";
    case SyncKind::Row: return "row";
    case SyncKind::Rows: return "rows(G)";
    case SyncKind::Strided: return "strided";
  }
  return "?";
}

// How a producer posts: all its consumers must agree (one output policy).
void chooseGrains(Model& m) {
  const Spec& spec = m.spec;
  m.outRules.assign(spec.stages.size(), {});
  m.isProducer.assign(spec.stages.size(), false);
  for (size_t p = 0; p < spec.stages.size(); ++p) {
    const SyncReq* chosen = nullptr;
    for (Edge& e : m.edges) {
      if (e.prod != int(p)) continue;
      m.isProducer[p] = true;
      const StageDecl& c = spec.stages[e.cons];
      for (const SyncReq& r : c.syncs)
        if (r.tensor == spec.tensors[e.tensor].name) {
          e.requested = r.kind;
          if (r.kind == SyncKind::Strided && e.rules.count < 2)
            throw SpecError(r.loc, "'strided' needs several reads of '" + r.tensor + "' at a fixed column stride");
          if (r.kind == SyncKind::Auto) continue;
          const bool rows = r.kind == SyncKind::Row || r.kind == SyncKind::Rows;
          if (chosen) {
            const bool chosenRows = chosen->kind == SyncKind::Row || chosen->kind == SyncKind::Rows;
            if (rows != chosenRows || (rows && chosen->group != r.group))
              throw SpecError(r.loc, "stage '" + spec.stages[p].name + "' posts one way to all its consumers, but '" +
                                         kindName(r.kind) + "' here conflicts with '" + kindName(chosen->kind) +
                                         "' at line " + str(chosen->loc.line));
          }
          chosen = &r;
        }
    }
    // auto: the finest grain the reads allow, one semaphore per tile, so a
    // consumer step never waits beyond the tiles it reads.
    cusyncgen_rt::Rules& out = m.outRules[p];
    if (chosen && (chosen->kind == SyncKind::Row || chosen->kind == SyncKind::Rows)) {
      out.grain = cusyncgen_rt::kRows;
      out.rowsPerSem = uint32_t(chosen->group);
    }
    for (Edge& e : m.edges)
      if (e.prod == int(p)) {
        e.rules.grain = out.grain;
        e.rules.rowsPerSem = out.rowsPerSem;
      }
  }
}

}  // namespace

Model analyze(const Spec& spec) {
  Model m;
  m.spec = spec;
  if (spec.stages.empty()) throw SpecError({1, 1}, "the spec declares no stage");
  for (const StageDecl& s : spec.stages) {
    checkLimits(s);
    checkShapes(spec, s);
    cusync::StageShape shape;
    shape.grid = cusync::Dim3(uint32_t(s.grid[0]), uint32_t(s.grid[1]), uint32_t(s.grid[2]));
    shape.tile = cusync::Dim3(uint32_t(s.tile[0]), uint32_t(s.tile[1]), uint32_t(s.tile[2]));
    m.shapes.push_back(shape);
  }
  for (size_t si = 0; si < spec.stages.size(); ++si) {
    const StageDecl& s = spec.stages[si];
    std::map<int, std::vector<int>> byTensor;
    for (size_t r = 0; r < s.reads.size(); ++r) {
      checkRead(spec, int(si), s.reads[r]);
      const int t = spec.findTensor(s.reads[r].tensor);
      if (spec.tensors[t].producer >= 0) byTensor[t].push_back(int(r));
    }
    for (const SyncReq& q : s.syncs) {
      const int t = spec.findTensor(q.tensor);
      if (t < 0) throw SpecError(q.loc, "unknown tensor '" + q.tensor + "'");
      if (!byTensor.count(t))
        throw SpecError(q.loc, "stage '" + s.name + "' reads no producer output named '" + q.tensor + "'");
    }
    if (byTensor.size() > cusync::kMaxInputs)
      throw SpecError(s.loc, "stage '" + s.name + "' reads " + str(int64_t(byTensor.size())) +
                                 " producers; a stage may wait on at most " + str(cusync::kMaxInputs));
    for (const StageDecl& p : spec.stages)
      if (&p != &s && !byTensor.empty() && p.grid[2] < s.grid[2]) {
        for (const auto& [t, reads] : byTensor)
          if (spec.tensors[t].producer == int(&p - &spec.stages[0]))
            throw SpecError(s.gridLoc, "shape mismatch: stage '" + s.name + "' has " + str(s.grid[2]) +
                                           " batches but its producer '" + p.name + "' has " + str(p.grid[2]));
      }
    const size_t firstEdge = m.edges.size();
    for (auto& [t, reads] : byTensor) {
      m.edges.push_back(makeEdge(spec, int(si), t, reads));
      if (m.edges.back().jSteps != m.edges[firstEdge].jSteps)
        throw SpecError(m.edges.back().loc, "stage '" + s.name +
                                                "' offsets its walk by j differently for two producers; a stage has one walk");
    }
  }
  chooseGrains(m);
  return m;
}

Model compile(const std::string& text, const std::string& file, const std::map<std::string, int64_t>& overrides) {
  return analyze(parseSpec(text, file, overrides));
}

}  // namespace cusyncgen
