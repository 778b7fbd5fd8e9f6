// Part (c) of --check: the derived policies and tile orders run through the
// real protocol on the CPU emulator with N SMs, under the launch modes that
// overlap stages (streams with priorities and a wait kernel, and PDL). Every
// producer tile stamps the run it belongs to; every consumer step checks,
// after its waits, that each tile it reads carries this run's stamp.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <variant>

#include "check.h"
#include "cusync/emu/pipeline.h"
#include "cusync/stage.h"
#include "progress.h"
#include "truth.h"

namespace cusyncgen {
namespace {

using cusync::policy::NoSync;
using RP = cusyncgen_rt::RulesPolicy;
template <class I, class O>
using St = cusync::Stage<I, O, cusync::HostMemory>;
using AnyStage = std::variant<std::unique_ptr<St<NoSync, NoSync>>, std::unique_ptr<St<NoSync, RP>>,
                              std::unique_ptr<St<RP, NoSync>>, std::unique_ptr<St<RP, RP>>>;

struct SpecOrder {
  bool columnMajor = false;
  uint32_t linearIndex(const cusync::Dim3& t, const cusync::Dim3& g) const {
    return cusyncgen_rt::linearIndex(columnMajor, t, g);
  }
};

uint32_t linear(const cusync::Dim3& t, const cusync::Dim3& g) { return (t.z * g.y + t.y) * g.x + t.x; }

// Stages in an order where every producer comes before its consumers.
std::vector<int> launchOrder(const Model& m) {
  const size_t n = m.spec.stages.size();
  std::vector<int> indeg(n, 0), order;
  for (const Edge& e : m.edges) ++indeg[e.cons];
  std::vector<bool> done(n, false);
  while (order.size() < n) {
    bool any = false;
    for (size_t s = 0; s < n; ++s) {
      if (done[s] || indeg[s] != 0) continue;
      done[s] = any = true;
      order.push_back(int(s));
      for (const Edge& e : m.edges)
        if (e.prod == int(s)) --indeg[e.cons];
    }
    if (!any) return {};  // a cycle
  }
  return order;
}

// How one emulated run ended: `bad` is empty when it ran to the end and
// every read saw its run's data; with timedOut it says where it stopped.
struct Outcome {
  std::string bad;
  bool timedOut = false;
};

class Run {
 public:
  Run(const Model& m, const CheckOptions& opts, cusync::LaunchMode mode, Progress& progress)
      : m_(m), sms_(opts.sms), tabulateUpTo_(opts.tabulateUpTo), mode_(mode), progress_(progress) {}

  Outcome go(uint32_t runs) {
    const std::vector<int> order = launchOrder(m_);
    if (order.empty()) return {"the stages' reads form a cycle: no launch order exists"};
    build();
    if (!precompute()) return {"emulator, " + std::string(cusync::toString(mode_)) + " mode: still tabulating reads", true};
    uint64_t tilesPerRun = 0;
    for (const cusync::StageShape& sh : m_.shapes) tilesPerRun += sh.grid.count();
    cusync::emu::Emulator emu({sms_, 1});
    cusync::emu::Pipeline pipe(emu, mode_);
    for (uint32_t run = 0; run < runs; ++run) {
      for (int s : order) std::visit([&](auto& st) { launch(pipe, *st, s); }, stages_[s]);
      pipe.finish();
      // The emulator blocks this thread; a second one reports its progress.
      const std::string what = "--check: emulator, " + std::string(cusync::toString(mode_)) + " mode, run " +
                               std::to_string(run + 1) + " of " + std::to_string(runs);
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      std::thread ticker([&] {
        std::unique_lock<std::mutex> lk(mu);
        while (!cv.wait_for(lk, std::chrono::milliseconds(500), [&] { return done; }))
          progress_.tick([&] {
            return what + ": " + std::to_string(tilesDone_.load() - run * tilesPerRun) + " of " +
                   std::to_string(tilesPerRun) + " tiles";
          });
      });
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(progress_.remaining());
      const cusync::emu::Report rep = emu.run(std::max(left, std::chrono::milliseconds(1)));
      {
        std::lock_guard<std::mutex> lk(mu);
        done = true;
      }
      cv.notify_one();
      ticker.join();
      if (rep.timedOut || deadlineHit_)
        return {"emulator, " + std::string(cusync::toString(mode_)) + " mode, run " + std::to_string(run + 1) + " of " +
                    std::to_string(runs) + " after " + std::to_string(tilesDone_.load() - run * tilesPerRun) + " of " +
                    std::to_string(tilesPerRun) + " tiles",
                true};
      if (!rep.ok) return {rep.message};
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_.empty()) return {error_};
    }
    return {};
  }

 private:
  void build() {
    const size_t n = m_.spec.stages.size();
    stamps_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      const StageDecl& d = m_.spec.stages[s];
      const std::vector<int> ins = m_.inputsOf(int(s));
      const RP in{ins.empty() ? cusyncgen_rt::Rules{} : m_.edges[ins[0]].rules};
      const RP out{m_.outRules[s]};
      const cusync::StageShape& sh = m_.shapes[s];
      const bool cons = !ins.empty(), prod = m_.isProducer[s];
      if (!cons && !prod) stages_.emplace_back(std::make_unique<St<NoSync, NoSync>>(d.name, sh.grid, sh.tile));
      else if (!cons) stages_.emplace_back(std::make_unique<St<NoSync, RP>>(d.name, sh.grid, sh.tile, NoSync{}, out));
      else if (!prod) stages_.emplace_back(std::make_unique<St<RP, NoSync>>(d.name, sh.grid, sh.tile, in, NoSync{}));
      else stages_.emplace_back(std::make_unique<St<RP, RP>>(d.name, sh.grid, sh.tile, in, out));
      std::visit([&](auto& st) { st->setOrder(SpecOrder{d.columnMajor}); }, stages_.back());
      stamps_[s] = std::make_unique<std::atomic<uint32_t>[]>(sh.grid.count());
      for (uint32_t t = 0; t < sh.grid.count(); ++t) stamps_[s][t].store(0);
    }
    for (size_t s = 0; s < n; ++s)
      for (int e : m_.inputsOf(int(s))) {
        const Edge& edge = m_.edges[e];
        std::visit(
            [&](auto& p, auto& c) {
              using P = std::decay_t<decltype(*p)>;
              using C = std::decay_t<decltype(*c)>;
              if constexpr (std::is_same_v<typename P::Out, RP> && std::is_same_v<typename C::In, RP>)
                cusync::pair(*p, *c, RP{edge.rules});
            },
            stages_[edge.prod], stages_[s]);
      }
  }

  // Where the producer tiles that step k of a tile's walk reads through edge
  // e start in need_[e].tiles (they end where the next step's start).
  size_t needIndex(const Edge& e, const cusync::Dim3& t, uint32_t k) const {
    const cusync::StageShape& cs = m_.shapes[e.cons];
    const uint32_t xs = e.jSteps ? cs.grid.x : 1;
    const uint32_t x = e.jSteps ? t.x : 0;
    return ((size_t(t.z) * cs.grid.y + t.y) * xs + x) * walkSteps(m_.spec.stages[e.cons]) + k;
  }

  // Tabulates every step's reads once (consumer tiles of one row, outside
  // j-offset walks, read the same) where the tables stay small; larger
  // walks are read from the spec's maps at each step instead. False if the
  // deadline passed first.
  bool precompute() {
    size_t entries = 0;
    for (const Edge& edge : m_.edges) {
      const cusync::StageShape& cs = m_.shapes[edge.cons];
      entries += size_t(cs.grid.z) * cs.grid.y * (edge.jSteps ? cs.grid.x : 1) * walkSteps(m_.spec.stages[edge.cons]);
      reads_.emplace_back(m_, edge);
    }
    if (entries > tabulateUpTo_) return true;
    need_.resize(m_.edges.size());
    for (size_t e = 0; e < m_.edges.size(); ++e) {
      const Edge& edge = m_.edges[e];
      const cusync::StageShape& cs = m_.shapes[edge.cons];
      const uint32_t steps = walkSteps(m_.spec.stages[edge.cons]);
      const uint32_t xs = edge.jSteps ? cs.grid.x : 1;
      Needs& n = need_[e];
      n.start.assign(size_t(cs.grid.z) * cs.grid.y * xs * steps + 1, 0);
      for (uint32_t z = 0; z < cs.grid.z; ++z)
        for (uint32_t y = 0; y < cs.grid.y; ++y) {
          if (progress_.tick([&] {
                return "--check: emulator, " + std::string(cusync::toString(mode_)) + " mode: tabulating the reads of '" +
                       m_.spec.stages[edge.cons].name + "', row tile " + std::to_string(y) + " of " +
                       std::to_string(cs.grid.y);
              }))
            return false;
          for (uint32_t x = 0; x < xs; ++x)
            for (uint32_t k = 0; k < steps; ++k) {
              const size_t i = needIndex(edge, cusync::Dim3(x, y, z), k);
              n.start[i] = n.tiles.size();
              reads_[e].read(x, y, z, k, n.tiles);
            }
        }
      n.start.back() = n.tiles.size();
    }
    return true;
  }

  // Calls f(tile) for each producer tile that step kb of consumer tile t reads through edge e.
  template <class F>
  void forEachRead(size_t e, const cusync::Dim3& t, uint32_t kb, F&& f) const {
    if (need_.empty()) {
      thread_local std::vector<cusync::Dim3> scratch;
      scratch.clear();
      reads_[e].read(t.x, t.y, t.z, kb, scratch);
      for (const cusync::Dim3& p : scratch) f(p);
      return;
    }
    const Needs& need = need_[e];
    const size_t at = needIndex(m_.edges[e], t, kb);
    for (size_t i = need.start[at]; i < need.start[at + 1]; ++i) f(need.tiles[i]);
  }

  void report(const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    if (error_.empty()) error_ = what;
  }

  template <class StageT>
  void launch(cusync::emu::Pipeline& pipe, const StageT& st, int s) {
    pipe.launch(st, [this, s](const typename StageT::View& v, cusync::emu::Block& b) { tile(v, b, s); });
  }

  template <class V>
  void tile(const V& v, cusync::emu::Block& b, int s) {
    const cusync::TileWork w = cusync::emu::tile(v, b);
    if (!w.valid) return;
    if constexpr (!cusync::policy::isNoSync<typename V::In>) {
      const std::vector<int> ins = m_.inputsOf(s);
      const uint32_t steps = walkSteps(m_.spec.stages[s]);
      const uint32_t ws = w.tile.x * m_.edges[ins[0]].jSteps;  // all inputs share the walk
      for (uint32_t kb = 0; kb < steps; ++kb) {
        // Waits that are already satisfied never look at the emulator's
        // abort flag, so a long walk looks at the deadline itself.
        if (kb % 1024 == 1023 && progress_.pastDeadline()) {
          deadlineHit_ = true;
          throw cusync::emu::Aborted{};
        }
        const cusync::Read r{(ws + kb) * v.shape.tile.z, w.tile.y * v.shape.tile.y, w.tile.z, ws * v.shape.tile.z};
        for (uint32_t n = 0; n < ins.size(); ++n) {
          cusync::emu::wait(v, w, r, n);
          const Edge& e = m_.edges[ins[n]];
          const cusync::StageShape& ps = m_.shapes[e.prod];
          forEachRead(ins[n], w.tile, kb, [&](const cusync::Dim3& t) {
            const uint32_t got = stamps_[e.prod][linear(t, ps.grid)].load(std::memory_order_relaxed);
            if (got != w.run)
              report("'" + m_.spec.stages[s].name + "' tile " + cusync::tileName(w.tile) + " run " +
                     std::to_string(w.run) + " at k-block " + std::to_string(kb) + " read '" +
                     m_.spec.stages[e.prod].name + "' tile " + cusync::tileName(t) + " holding run " +
                     std::to_string(got));
          });
        }
      }
    }
    stamps_[s][linear(w.tile, v.shape.grid)].store(w.run, std::memory_order_relaxed);
    cusync::emu::post(v, w);
    tilesDone_.fetch_add(1, std::memory_order_relaxed);
  }

  struct Needs {
    std::vector<size_t> start;
    std::vector<cusync::Dim3> tiles;
  };

  const Model& m_;
  uint32_t sms_;
  size_t tabulateUpTo_;
  cusync::LaunchMode mode_;
  Progress& progress_;
  std::vector<AnyStage> stages_;
  std::vector<std::unique_ptr<std::atomic<uint32_t>[]>> stamps_;
  std::vector<ReadMap> reads_;
  std::vector<Needs> need_;  // empty where reads_ are read at each step
  std::atomic<uint64_t> tilesDone_{0};
  std::atomic<bool> deadlineHit_{false};
  std::mutex mu_;
  std::string error_;
};

}  // namespace

CheckResult checkEmulated(const Model& m, const CheckOptions& opts) {
  CheckResult res;
  Progress progress(opts.progress, opts.start, opts.deadline);
  for (cusync::LaunchMode mode : {cusync::LaunchMode::Streams, cusync::LaunchMode::Pdl}) {
    Outcome out;
    try {
      out = Run(m, opts, mode, progress).go(2);
    } catch (const std::exception& ex) {
      out.bad = ex.what();
    }
    if (!out.bad.empty()) {
      res.ok = false;
      res.timedOut = out.timedOut;
      res.counterexample = out.timedOut ? out.bad
                                        : std::string("emulator, ") + cusync::toString(mode) + " mode, " +
                                              std::to_string(opts.sms) + " SMs: " + out.bad;
      return res;
    }
    res.lines.push_back(std::string("emulator, ") + cusync::toString(mode) + " mode, " + std::to_string(opts.sms) +
                        " SMs, 2 runs: no deadlock, every read saw its run's data");
  }
  return res;
}

CheckResult check(const Model& m, const CheckOptions& opts) {
  CheckResult res = checkWaits(m, opts);
  if (!res.ok || !opts.emulate) return res;
  CheckResult emu = checkEmulated(m, opts);
  res.ok = emu.ok;
  res.timedOut = emu.timedOut;
  res.counterexample = emu.counterexample;
  res.lines.insert(res.lines.end(), emu.lines.begin(), emu.lines.end());
  return res;
}

}  // namespace cusyncgen
