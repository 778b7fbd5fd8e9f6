// Parts (a) and (b) of --check: walk every consumer tile through its
// reduction with the derived policy and compare each step's waits with the
// tiles the spec says the step reads.
#include <sstream>

#include "check.h"
#include "cusync/tile_order.h"
#include "truth.h"

namespace cusyncgen {
namespace {

struct SpecOrder {
  bool columnMajor = false;
  uint32_t linearIndex(const cusync::Dim3& t, const cusync::Dim3& g) const {
    return cusyncgen_rt::linearIndex(columnMajor, t, g);
  }
};

std::string tileText(const cusync::Dim3& t) { return cusync::tileName(t); }

// Checks one edge; returns an empty string or the first counterexample.
std::string checkEdge(const Model& m, const Edge& e, std::string& summary) {
  const StageDecl& cd = m.spec.stages[e.cons];
  const StageDecl& pd = m.spec.stages[e.prod];
  const cusync::StageShape& cs = m.shapes[e.cons];
  const cusync::StageShape& ps = m.shapes[e.prod];
  const cusyncgen_rt::RulesPolicy in{e.rules}, out{m.outRules[e.prod]};
  const std::string edge = "'" + cd.name + "' <- '" + pd.name + "' (" + m.spec.tensors[e.tensor].name + ")";
  if (const char* msg = in.checkPair(cs, ps)) return edge + ": " + msg;
  const uint32_t nsem = out.semaphoreCount(ps);
  if (in.semaphoreCount(ps) != nsem) return edge + ": consumer and producer disagree on the semaphore count";
  std::vector<uint64_t> posts(nsem, 0);
  for (uint32_t z = 0; z < ps.grid.z; ++z)
    for (uint32_t y = 0; y < ps.grid.y; ++y)
      for (uint32_t x = 0; x < ps.grid.x; ++x) {
        const cusync::Dim3 t(x, y, z);
        const uint32_t s = out.tileIndex(t, ps);
        if (s >= nsem) return edge + ": producer tile " + tileText(t) + " posts to semaphore " + std::to_string(s) +
                              " of " + std::to_string(nsem);
        posts[s] += out.postValue(t, ps);
      }
  const uint32_t steps = walkSteps(cd);
  const uint32_t xs = e.jSteps ? cs.grid.x : 1;  // reads ignore j unless the walk is offset by it
  uint64_t waits = 0;
  for (uint32_t z = 0; z < cs.grid.z; ++z)
    for (uint32_t y = 0; y < cs.grid.y; ++y)
      for (uint32_t x = 0; x < xs; ++x) {
        const uint32_t ws = x * e.jSteps;
        const std::string who = "consumer '" + cd.name + "' tile (" + (e.jSteps ? std::to_string(x) : "*") + "," +
                                std::to_string(y) + "," + std::to_string(z) + ")";
        std::vector<std::vector<cusync::Dim3>> need(steps);
        std::vector<int64_t> lastRead(nsem, -1);  // last step reading a tile of each semaphore
        for (uint32_t k = 0; k < steps; ++k) {
          need[k] = tilesRead(m, e, x, y, z, k);
          for (const cusync::Dim3& t : need[k]) lastRead[out.tileIndex(t, ps)] = k;
        }
        std::vector<char> waited(nsem, 0);
        for (uint32_t k = 0; k < steps; ++k) {
          const cusync::Read r{(ws + k) * cs.tile.z, y * cs.tile.y, z, ws * cs.tile.z};
          const std::string at = who + " at k-block " + std::to_string(k) + " (Read col " + std::to_string(r.col) +
                                 ", row " + std::to_string(r.row) + ", walkStart " + std::to_string(r.walkStart) + ")";
          const cusync::SemSpan span = in.waitSpan(r, cs, ps);
          for (uint32_t n = 0; n < span.count(); ++n) {
            const uint32_t s = span.at(n);
            ++waits;
            if (s >= nsem)
              return at + ": waits on semaphore " + std::to_string(s) + " but '" + pd.name + "' has " +
                     std::to_string(nsem);
            if (in.waitValue(s, ps) != posts[s])
              return at + ": waits for " + std::to_string(in.waitValue(s, ps)) + " on semaphore " + std::to_string(s) +
                     " but '" + pd.name + "' posts " + std::to_string(posts[s]) + " to it per run";
            if (waited[s]) return at + ": waits a second time on semaphore " + std::to_string(s) + " (b)";
            if (lastRead[s] < int64_t(k))
              return at + ": waits on semaphore " + std::to_string(s) +
                     ", but no tile posting to it is read from this k-block on (b)";
            waited[s] = 1;
          }
          for (const cusync::Dim3& t : need[k]) {
            const uint32_t s = out.tileIndex(t, ps);
            if (!waited[s])
              return at + ": reads producer '" + pd.name + "' tile " + tileText(t) +
                     " but has not waited on its semaphore " + std::to_string(s) + " (a)";
          }
        }
      }
  std::ostringstream o;
  o << edge << ": " << cs.grid.count() << " consumer tiles x " << steps << " k-blocks: every read covered, no wait beyond "
    << (e.rules.grain == cusyncgen_rt::kTile ? "the tiles read" : "the rows read") << " (" << nsem << " semaphores, "
    << waits << " semaphore waits over the distinct walks)";
  summary = o.str();
  return "";
}

}  // namespace

CheckResult checkWaits(const Model& m) {
  CheckResult res;
  for (size_t s = 0; s < m.spec.stages.size(); ++s) {
    try {
      cusync::buildOrderTable(SpecOrder{m.spec.stages[s].columnMajor}, m.shapes[s].grid, m.spec.stages[s].name);
    } catch (const std::exception& ex) {
      res.ok = false;
      res.counterexample = ex.what();
      return res;
    }
  }
  for (const Edge& e : m.edges) {
    std::string summary;
    const std::string bad = checkEdge(m, e, summary);
    if (!bad.empty()) {
      res.ok = false;
      res.counterexample = bad;
      return res;
    }
    res.lines.push_back(summary);
  }
  return res;
}

}  // namespace cusyncgen
