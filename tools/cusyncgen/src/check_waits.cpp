// Parts (a) and (b) of --check: walk every consumer tile through its
// reduction with the derived policy and compare each step's waits with the
// tiles the spec says the step reads.
#include <sstream>

#include "check.h"
#include "cusync/tile_order.h"
#include "progress.h"
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
// The work is linear in consumer tiles x steps: per-semaphore marks carry
// the number of the consumer tile that set them, so nothing is cleared
// between tiles.
std::string checkEdge(const Model& m, const Edge& e, std::string& summary, Progress& progress, bool& timedOut) {
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
  const ReadMap reads(m, e);
  const uint32_t steps = walkSteps(cd);
  const uint32_t xs = e.jSteps ? cs.grid.x : 1;  // reads ignore j unless the walk is offset by it
  const uint64_t tiles = uint64_t(cs.grid.z) * cs.grid.y * xs;
  // Per semaphore: the consumer tile (numbered from 1) that last read a tile
  // posting to it and at which step, and the one that last waited on it.
  std::vector<uint32_t> readBy(nsem, 0), lastRead(nsem, 0), waitedBy(nsem, 0);
  std::vector<cusync::Dim3> need;  // the producer tiles one step reads
  uint64_t waits = 0, work = 0;
  uint32_t tile = 0;
  // The deadline and progress, looked at every 4096 steps: a step is cheap,
  // but one consumer tile may have millions of them.
  auto outOfTime = [&] {
    if (++work % 4096 != 0 ||
        !progress.tick([&] {
          return "--check: coverage of " + edge + ": " + std::to_string(tile) + " of " + std::to_string(tiles) +
                 " consumer tiles";
        }))
      return false;
    timedOut = true;
    return true;
  };
  auto stopped = [&] {
    return "coverage of " + edge + " at consumer tile " + std::to_string(tile) + " of " + std::to_string(tiles);
  };
  for (uint32_t z = 0; z < cs.grid.z; ++z)
    for (uint32_t y = 0; y < cs.grid.y; ++y)
      for (uint32_t x = 0; x < xs; ++x) {
        ++tile;
        const uint32_t ws = x * e.jSteps;
        // Pass 1: the last step that reads a tile of each semaphore.
        for (uint32_t k = 0; k < steps; ++k) {
          if (outOfTime()) return stopped();
          need.clear();
          reads.read(x, y, z, k, need);
          for (const cusync::Dim3& t : need) {
            const uint32_t s = out.tileIndex(t, ps);
            readBy[s] = tile;
            lastRead[s] = k;
          }
        }
        // Pass 2: each step's waits, against what it and the later steps read.
        for (uint32_t k = 0; k < steps; ++k) {
          if (outOfTime()) return stopped();
          const cusync::Read r{(ws + k) * cs.tile.z, y * cs.tile.y, z, ws * cs.tile.z};
          auto at = [&] {
            return "consumer '" + cd.name + "' tile (" + (e.jSteps ? std::to_string(x) : "*") + "," +
                   std::to_string(y) + "," + std::to_string(z) + ") at k-block " + std::to_string(k) + " (Read col " +
                   std::to_string(r.col) + ", row " + std::to_string(r.row) + ", walkStart " +
                   std::to_string(r.walkStart) + ")";
          };
          const cusync::SemSpan span = in.waitSpan(r, cs, ps);
          for (uint32_t n = 0; n < span.count(); ++n) {
            const uint32_t s = span.at(n);
            ++waits;
            if (s >= nsem)
              return at() + ": waits on semaphore " + std::to_string(s) + " but '" + pd.name + "' has " +
                     std::to_string(nsem);
            if (in.waitValue(s, ps) != posts[s])
              return at() + ": waits for " + std::to_string(in.waitValue(s, ps)) + " on semaphore " +
                     std::to_string(s) + " but '" + pd.name + "' posts " + std::to_string(posts[s]) + " to it per run";
            if (waitedBy[s] == tile) return at() + ": waits a second time on semaphore " + std::to_string(s) + " (b)";
            if (readBy[s] != tile || lastRead[s] < k)
              return at() + ": waits on semaphore " + std::to_string(s) +
                     ", but no tile posting to it is read from this k-block on (b)";
            waitedBy[s] = tile;
          }
          need.clear();
          reads.read(x, y, z, k, need);
          for (const cusync::Dim3& t : need) {
            const uint32_t s = out.tileIndex(t, ps);
            if (waitedBy[s] != tile)
              return at() + ": reads producer '" + pd.name + "' tile " + tileText(t) +
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

CheckResult checkWaits(const Model& m, const CheckOptions& opts) {
  CheckResult res;
  Progress progress(opts.progress, opts.start, opts.deadline);
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
    bool timedOut = false;
    const std::string bad = checkEdge(m, e, summary, progress, timedOut);
    if (!bad.empty()) {
      res.ok = false;
      res.timedOut = timedOut;
      res.counterexample = bad;
      return res;
    }
    res.lines.push_back(summary);
  }
  return res;
}

}  // namespace cusyncgen
