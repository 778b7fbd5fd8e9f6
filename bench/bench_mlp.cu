// cusync-bench mlp: the MLP pipelines of kernels/mlp (nosync, pdl, rowsync,
// tilesync with tile-order choices, fused) against the best baseline, side by
// side in one process: the cuBLAS pipeline PyTorch runs, or our own two GEMMs
// in stream order without cusync (nosync), whichever is faster. Every variant
// is checked against the cuBLAS result before it is timed. Medians of
// CUDA-event timings of back-to-back runs (or of CUDA graph replays with
// --graph) after warm-up, every variant and the GEMMs alone interleaved run
// by run so that all see the same clock states. Weights
// are 2 x 151 MB (GPT-3) or 2 x 90 MB (LLaMA), so every run's working set
// exceeds the 50 MB L2 without rotation. The peak GEMM rate (a large cuBLAS
// bf16 GEMM) and memory bandwidth (a large device-to-device copy, bytes read
// plus written) are measured in the same run for the roofline.
#include "bench_mlp.h"
#include "bench_ceilings.h"
#include "bench_json.h"
#include "bench_output.h"
#include "bench_util.cuh"
#include "trace_csv.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cusync/error.h"
#include "cusync/launch.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp.h"

using namespace cusync_mlp;

namespace {

struct VariantSpec {
  std::string name;
  Variant v;
  Order o;
  bool pdl = true;
};

VariantSpec parseSpec(const std::string& s) {
  VariantSpec sp{s, Variant::NoSync, Order::Auto};
  std::string base = s;
  const size_t at = base.find('@');
  if (at != std::string::npos) {
    if (base.substr(at + 1) != "serial")
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp", "unknown launch '" + base.substr(at + 1) + "'");
    sp.pdl = false;
    base = base.substr(0, at);
  }
  const size_t c = base.find(':');
  sp.v = parseVariant(base.substr(0, c));
  // Orders and the serial launch apply to the two-kernel synchronized variants.
  if ((sp.v == Variant::Fused || sp.v == Variant::NoSync || sp.v == Variant::Cublas) && s != toString(sp.v))
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp",
                        std::string(toString(sp.v)) + " takes no order or launch suffix");
  if (c != std::string::npos) {
    const std::string o = base.substr(c + 1);
    if (o == "rowmajor") sp.o = Order::RowMajor;
    else if (o == "grouped") sp.o = Order::Grouped;
    else throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp", "unknown order '" + o + "'");
  }
  return sp;
}

// ||out - ref|| / ||ref||; infinity when out has a non-finite element.
double relErr(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    num += double(out[i] - ref[i]) * (out[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

// What one traced run of a variant shows (our GEMM kernels' per-tile
// timelines; NaN for cuBLAS):
//   tail:   GEMM1's tail, from the first SM running out of GEMM1 tiles to
//           GEMM1's last tile (ms); idle: the SM-time share GEMM1 leaves idle
//           over its span (part-empty waves);
//   filled: the share of that idle SM-time in which GEMM2 tiles computed
//           (their span minus their waits): the overlap achieved;
//   g2start: when GEMM2's first tile began, after GEMM1's first (ms);
//   wait:   mean and max time a GEMM2 tile spent waiting on GEMM1 (us).
//   period: from the previous run's first GEMM1 block to this run's (us),
//           runs launched back to back: the time a run costs in steady state;
//   gap:    from the previous run's last GEMM2 block exit to this run's
//           first GEMM1 block entry (us): the boundary between runs.
struct TraceStats {
  double tailMs = NAN, idle = NAN, filled = NAN, g2StartMs = NAN, waitMeanUs = NAN, waitMaxUs = NAN;
  double periodUs = NAN, gapUs = NAN;
};

// The steady-state period and the run boundary (TraceStats) from two
// consecutive traced runs.
void analyzeBoundary(TraceStats& st, const std::vector<cusync_gemm::TileTrace>& prev1,
                     const std::vector<cusync_gemm::TileTrace>& prev2, const std::vector<cusync_gemm::TileTrace>& t1) {
  unsigned long long prevEntry = ~0ull, entry = ~0ull, prevExit = 0;
  for (const auto& r : prev1)
    if (r.blockEntry != 0) prevEntry = std::min(prevEntry, r.blockEntry);
  for (const auto& r : prev2) prevExit = std::max(prevExit, r.blockExit);
  for (const auto& r : t1)
    if (r.blockEntry != 0) entry = std::min(entry, r.blockEntry);
  if (prevEntry == ~0ull || entry == ~0ull || prevExit == 0) return;
  st.periodUs = (double(entry) - double(prevEntry)) * 1e-3;
  st.gapUs = (double(entry) - double(prevExit)) * 1e-3;
}

TraceStats analyze(const std::vector<cusync_gemm::TileTrace>& t1, const std::vector<cusync_gemm::TileTrace>& t2,
                   int sms) {
  TraceStats st;
  auto done = [](const cusync_gemm::TileTrace& r) { return r.start != 0 && r.end != 0; };
  unsigned long long t0 = ~0ull, g1End = 0;
  for (const auto& r : t1)
    if (done(r)) t0 = std::min(t0, r.start), g1End = std::max(g1End, r.end);
  if (g1End == 0) return st;
  std::vector<unsigned long long> last(sms, t0);
  for (const auto& r : t1) {
    if (!done(r)) continue;
    if (r.sm < unsigned(sms)) last[r.sm] = std::max(last[r.sm], r.end);
    if (r.peerSm != 0 && r.peerSm <= unsigned(sms)) last[r.peerSm - 1] = std::max(last[r.peerSm - 1], r.end);
  }
  const unsigned long long tailStart = *std::min_element(last.begin(), last.end());
  double idleNs = 0;
  for (unsigned long long l : last) idleNs += double(g1End - l);
  st.tailMs = double(g1End - tailStart) * 1e-6;
  st.idle = idleNs / (double(sms) * double(g1End - t0));
  double busyIn = 0, waitSum = 0, waitMax = 0;
  unsigned long long g2Start = ~0ull;
  int n2 = 0;
  for (const auto& r : t2) {
    if (!done(r)) continue;
    ++n2;
    g2Start = std::min(g2Start, r.start);
    waitSum += r.waitNs;
    waitMax = std::max(waitMax, double(r.waitNs));
    const unsigned long long b = std::max(r.start + r.waitNs, t0), e = std::min(r.end, g1End);
    if (e > b) busyIn += double(e - b);
  }
  if (n2 == 0) return st;
  st.filled = idleNs > 0 ? std::min(1.0, busyIn / idleNs) : 0.0;
  st.g2StartMs = (double(g2Start) - double(t0)) * 1e-6;
  st.waitMeanUs = waitSum / n2 * 1e-3;
  st.waitMaxUs = waitMax * 1e-3;
  return st;
}

struct Row {
  std::string model, variant;
  int64_t M;
  double ms, speedup, eff, err;  // speedup over the best baseline (cuBLAS or nosync)
  double vsCublas, vsNosync;
  bool ok;
  TraceStats tr;
  double chainUs;  // --chain: us per run, runs back to back (NaN when not timed)
};

// A summary row's candidates at (model, M): the cuBLAS and nosync rows and
// the fastest other row by `time`, each passing its check and timed (finite).
struct SummaryRows {
  const Row *best = nullptr, *cublas = nullptr, *nosync = nullptr;
  bool complete() const { return best && cublas && nosync; }
};
SummaryRows summaryRows(const std::vector<Row>& rows, const std::string& model, int64_t M, double Row::*time) {
  SummaryRows p;
  for (const Row& r : rows) {
    if (r.model != model || r.M != M || !r.ok || !std::isfinite(r.*time)) continue;
    if (r.variant == "cublas") p.cublas = &r;
    else if (r.variant == "nosync") p.nosync = &r;
    else if (!p.best || r.*time < p.best->*time) p.best = &r;
  }
  return p;
}

}  // namespace

std::string mlpVariantError(const std::string& variant) {
  try {
    parseSpec(variant);
    return "";
  } catch (const std::exception& e) {
    // The problem itself, without the library's "cusync: stage 'mlp': invalid argument: " prefix.
    const std::string what = e.what();
    const size_t at = what.find("invalid argument: ");
    return at == std::string::npos ? what : what.substr(at + 18);
  }
}

int benchMlp(const MlpBenchOptions& o) {
  // The command line checked every value; "both" stands for the two models.
  std::vector<std::string> models;
  for (const std::string& m : o.models)
    for (const char* one : {"gpt3", "llama"})
      if ((m == one || m == "both") && std::find(models.begin(), models.end(), one) == models.end()) models.push_back(one);
  const std::vector<int64_t>& tokens = o.tokens;
  const int iters = o.iters;
  const std::string &json = o.json, &csv = o.csv;
  const bool checkOnly = o.checkOnly;
  std::vector<VariantSpec> specs;
  for (const auto& v : o.variants) specs.push_back(parseSpec(v));

  cudaDeviceProp prop{};
  if (!bench::commandFindsHopper("mlp", &prop)) return 3;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  double peak = 0, bw = 0;
  if (!checkOnly) {
    peak = bench::measurePeakTflops(s, 20);
    bw = bench::measureBandwidthTBs(s, 20);
    std::printf("ceilings: cuBLAS bf16 GEMM 8192^3 %.0f TFLOP/s, device copy %.2f TB/s (read + write)\n", peak, bw);
  }
  std::fflush(stdout);
  const int64_t maxM = *std::max_element(tokens.begin(), tokens.end());
  std::vector<Row> rows;
  struct Detail {
    std::string model;
    int64_t M;
    std::string configs;
    double g1, g2, cb1, cb2, roofMs;
  };
  std::vector<Detail> details;
  bool allOk = true;

  for (const auto& mname : models) {
    const Model model = parseModel(mname);
    const Dims d = dims(model);
    __nv_bfloat16 *X, *W1, *W2, *H, *Y;
    CUDA_OK(cudaMalloc(&X, maxM * d.K1 * 2));
    CUDA_OK(cudaMalloc(&W1, d.N1 * d.K1 * 2));
    CUDA_OK(cudaMalloc(&W2, d.N2 * d.K2 * 2));
    CUDA_OK(cudaMalloc(&H, maxM * d.K2 * 2));
    CUDA_OK(cudaMalloc(&Y, maxM * d.N2 * 2));
    bench::fillRandomBf16(X, maxM * d.K1, 3, 1.f, s);
    bench::fillRandomBf16(W1, d.N1 * d.K1, 4, 1.7f / std::sqrt(float(d.K1)), s);
    bench::fillRandomBf16(W2, d.N2 * d.K2, 5, 1.7f / std::sqrt(float(d.K2)), s);
    bench::drain(s, "filling the operands");
    Mlp mlp(model, maxM);
    const Buffers b{X, W1, H, W2, Y};
    // Per-tile trace buffers, sized for the smallest tiles (64 x 128).
    const size_t traceN1 = size_t((maxM + 63) / 64) * size_t((d.N1 + 127) / 128);
    const size_t traceN2 = size_t((maxM + 63) / 64) * size_t((d.N2 + 127) / 128);
    // kTracedRuns back-to-back traced runs, each into buffers of its own: the
    // last two show a run in steady state and the boundary before it.
    constexpr int kTracedRuns = 6;
    std::vector<cusync_gemm::TileTrace*> tr1(kTracedRuns), tr2(kTracedRuns);
    for (int r = 0; r < kTracedRuns; ++r) {
      CUDA_OK(cudaMalloc(&tr1[r], traceN1 * sizeof(cusync_gemm::TileTrace)));
      CUDA_OK(cudaMalloc(&tr2[r], traceN2 * sizeof(cusync_gemm::TileTrace)));
    }
    for (int64_t M : tokens) {
      std::fprintf(stderr, "[mlp] %s M=%lld (%s): checking and timing %zu variants\n", mname.c_str(), (long long)M,
                   (mlp.configs(M, Variant::TileSync) + ", nosync " + mlp.configs(M, Variant::NoSync) + ", fused " +
                    mlp.configs(M, Variant::Fused)).c_str(),
                   specs.size());
      // Reference: the cuBLAS pipeline.
      mlp.run(M, b, Variant::Cublas, s);
      bench::drain(s, mname + " M=" + std::to_string(M) + " the cuBLAS reference");
      const std::vector<float> ref = bench::downloadBf16(Y, M * d.N2);
      std::vector<double> err(specs.size());
      std::vector<bool> ok(specs.size());
      for (size_t i = 0; i < specs.size(); ++i) {
        try {
          CUDA_OK(cudaMemsetAsync(Y, 0xFF, M * d.N2 * 2, s));
          CUDA_OK(cudaMemsetAsync(H, 0xFF, M * d.K2 * 2, s));
          mlp.run(M, b, specs[i].v, s, specs[i].o, specs[i].pdl);
          bench::drain(s, mname + " M=" + std::to_string(M) + " " + specs[i].name + " (check)");
          CUDA_OK(cudaGetLastError());
          err[i] = relErr(bench::downloadBf16(Y, M * d.N2), ref);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "[mlp] %s M=%lld %s: %s\n", mname.c_str(), (long long)M, specs[i].name.c_str(),
                       e.what());
          err[i] = INFINITY;
        }
        ok[i] = err[i] < 2e-2;
        if (!ok[i]) allOk = false;
      }
      const double flops = 2.0 * M * (double(d.K1) * d.N1 + double(d.K2) * d.N2);
      const double bytes = 2.0 * (double(d.N1) * d.K1 + double(d.N2) * d.K2 + double(M) * d.K1 + double(M) * d.N2);
      const double roofMs = checkOnly ? 0 : std::max(flops / (peak * 1e12), bytes / (bw * 1e12)) * 1e3;
      std::vector<double> ms(specs.size(), INFINITY);
      std::vector<TraceStats> traces(specs.size());
      std::vector<double> chainUs(specs.size(), NAN);  // --chain: us per run, back to back
      Detail det{mname,
                 M,
                 mlp.configs(M, Variant::TileSync) + ", nosync " + mlp.configs(M, Variant::NoSync) + ", fused " +
                     mlp.configs(M, Variant::Fused),
                 NAN,
                 NAN,
                 NAN,
                 NAN,
                 roofMs};
      if (!checkOnly) {
        // Every passing variant and the four GEMMs alone, interleaved
        // (bench::interleavedMediansMs); a variant's graph holds one run,
        // captured after its check run prepared it.
        bench::Interleaved set(o.graph, s);
        for (size_t i = 0; i < specs.size(); ++i) {
          if (!ok[i]) continue;
          const VariantSpec& sp = specs[i];
          set.add([&, sp](int) { mlp.run(M, b, sp.v, s, sp.o, sp.pdl); }, 1, &ms[i],
                  [&, i](const char* phase, const std::string& what) {
                    std::fprintf(stderr, "[mlp] %s M=%lld %s (%s): %s\n", mname.c_str(), (long long)M,
                                 specs[i].name.c_str(), phase, what.c_str());
                    ok[i] = false, allOk = false;
                  });
        }
        set.add([&](int) { mlp.gemm1(M, b, s); }, 1, &det.g1);
        set.add([&](int) { mlp.gemm2(M, b, s); }, 1, &det.g2);
        set.add([&](int) { mlp.cublasGemm1(M, b, s); }, 1, &det.cb1);
        set.add([&](int) { mlp.cublasGemm2(M, b, s); }, 1, &det.cb2);
        set.time(iters);
        // --chain K: each variant's time per run over K runs launched back to
        // back between two events, the median of five such chains, the
        // variants taking turns chain by chain (interleavedMediansMs, as the
        // timing above, so that all see the same clock states). The timed
        // runs above each sit between two events; back to back, as decode
        // steps run, a run's kernels may start during the run before
        // (programmatic dependent launch) on the SMs that run leaves.
        if (o.chain > 0) {
          std::vector<bench::Run> chains;
          std::vector<size_t> chained;  // the variant of each chain candidate
          for (size_t i = 0; i < specs.size(); ++i) {
            if (!ok[i]) continue;
            const VariantSpec sp = specs[i];
            chains.push_back([&, sp](int) {
              for (int r = 0; r < o.chain; ++r) mlp.run(M, b, sp.v, s, sp.o, sp.pdl);
            });
            chained.push_back(i);
          }
          const bench::Timings t = bench::interleavedMediansMs(chains, 5, s, 1, [&](size_t k) {
            std::fprintf(stderr, "[mlp] %s M=%lld %s (runs back to back): it hangs\n", mname.c_str(), (long long)M,
                         specs[chained[k]].name.c_str());
          });
          for (size_t k = 0; k < chained.size(); ++k)
            if (std::isfinite(t.ms[k])) chainUs[chained[k]] = t.ms[k] * 1e3 / o.chain;
        }
        // Traced runs per variant, after timing (tracing adds a few stores per
        // tile): back to back, the last one analyzed.
        for (size_t i = 0; i < specs.size(); ++i) {
          if (!ok[i] || specs[i].v == Variant::Cublas) continue;
          for (int r = 0; r < kTracedRuns; ++r) {
            CUDA_OK(cudaMemsetAsync(tr1[r], 0, traceN1 * sizeof(cusync_gemm::TileTrace), s));
            CUDA_OK(cudaMemsetAsync(tr2[r], 0, traceN2 * sizeof(cusync_gemm::TileTrace), s));
          }
          bench::drain(s, "clearing the traces");
          for (int r = 0; r < kTracedRuns; ++r) {
            Buffers bt = b;
            bt.trace1 = tr1[r], bt.trace2 = tr2[r];
            mlp.run(M, bt, specs[i].v, s, specs[i].o, specs[i].pdl);
          }
          bench::drain(s, mname + " M=" + std::to_string(M) + " " + specs[i].name + " (traced runs)");
          const auto h1 = bench::download(tr1[kTracedRuns - 1], traceN1);
          const auto h2 = bench::download(tr2[kTracedRuns - 1], traceN2);
          traces[i] = analyze(h1, h2, prop.multiProcessorCount);
          analyzeBoundary(traces[i], bench::download(tr1[kTracedRuns - 2], traceN1),
                          bench::download(tr2[kTracedRuns - 2], traceN2), h1);
          if (!o.traceDir.empty()) {
            std::string name = specs[i].name;
            for (char& c : name)
              if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
            std::vector<bench::RunTrace> runs;
            for (int r = 0; r < kTracedRuns; ++r)
              runs.emplace_back(bench::download(tr1[r], traceN1), bench::download(tr2[r], traceN2));
            bench::writeTraceCsv(o.traceDir + "/" + mname + "-m" + std::to_string(M) + "-" + name + ".csv", runs, "gemm");
          }
        }
      }
      details.push_back(det);
      double cublasMs = INFINITY, nosyncMs = INFINITY;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (specs[i].v == Variant::Cublas) cublasMs = std::min(cublasMs, ms[i]);
        if (specs[i].v == Variant::NoSync) nosyncMs = std::min(nosyncMs, ms[i]);
      }
      const double baseMs = std::min(cublasMs, nosyncMs);
      if (checkOnly) {
        for (size_t i = 0; i < specs.size(); ++i)
          std::printf("%-6s M=%-5lld %-18s err %.2e %s\n", mname.c_str(), (long long)M, specs[i].name.c_str(), err[i],
                      ok[i] ? "ok" : "FAIL");
      } else {
        std::printf("%s M=%lld (tiles %s): ours gemm1 %.3f + gemm2 %.3f = %.3f ms; cuBLAS gemm1 %.3f + gemm2 %.3f "
                    "ms; roofline %.3f ms; best baseline %.3f ms (%s)\n",
                    mname.c_str(), (long long)M, det.configs.c_str(), det.g1, det.g2, det.g1 + det.g2, det.cb1, det.cb2,
                    roofMs, baseMs, nosyncMs < cublasMs ? "nosync" : "cublas");
        for (size_t i = 0; i < specs.size(); ++i) {
          if (!ok[i]) {
            std::printf("  %-18s FAILED check (err %.2e)\n", specs[i].name.c_str(), err[i]);
            continue;
          }
          std::printf("  %-18s %8.3f ms  speedup %5.3f  roofline eff %4.2f  err %.1e", specs[i].name.c_str(), ms[i],
                      baseMs / ms[i], roofMs / ms[i], err[i]);
          if (std::isfinite(chainUs[i])) std::printf("  back to back %.1f us/run", chainUs[i]);
          const TraceStats& t = traces[i];
          if (std::isfinite(t.tailMs))
            std::printf("  | gemm1 tail %.3f ms, idle %2.0f%%, filled %2.0f%%, gemm2 from %.3f ms, wait/tile %.1f us (max "
                        "%.0f), run period %.1f us, gap %.1f us",
                        t.tailMs, 100 * t.idle, 100 * t.filled, t.g2StartMs, t.waitMeanUs, t.waitMaxUs, t.periodUs,
                        t.gapUs);
          std::printf("\n");
        }
      }
      std::fflush(stdout);
      for (size_t i = 0; i < specs.size(); ++i)
        rows.push_back({mname, specs[i].name, M, ms[i], checkOnly ? NAN : baseMs / ms[i],
                        checkOnly ? NAN : roofMs / ms[i], err[i], checkOnly ? NAN : cublasMs / ms[i],
                        checkOnly ? NAN : nosyncMs / ms[i], bool(ok[i]), traces[i], chainUs[i]});
    }
    cudaFree(X), cudaFree(W1), cudaFree(W2), cudaFree(H), cudaFree(Y);
    for (int r = 0; r < kTracedRuns; ++r) cudaFree(tr1[r]), cudaFree(tr2[r]);
  }

  // Summary: per M the winning cusync variant (synchronized or fused)
  // against the best baseline (cuBLAS or our nosync), and geomeans.
  if (!checkOnly) {
    std::printf("\nsummary (%s; speedup = baseline ms / ms, baseline = the faster of cublas and nosync; eff = roofline "
                "ms / ms)\n",
                o.graph ? "CUDA graph replays" : "back-to-back launches");
    std::printf("%-6s %6s %8s %8s %18s %8s %8s %8s %8s %5s %9s %6s %7s %8s\n", "model", "M", "cublas", "nosync",
                "winner", "ms", "vs_base", "vs_cubl", "vs_nosy", "eff", "g1tail_ms", "idle", "filled", "wait_us");
    for (const auto& mname : models) {
      double logBase = 0, logCublas = 0, logNosync = 0;
      int n = 0;
      for (int64_t M : tokens) {
        const SummaryRows p = summaryRows(rows, mname, M, &Row::ms);
        const Row *best = p.best, *cb = p.cublas, *ns = p.nosync;
        if (!p.complete()) {
          std::printf("%-6s %6lld  (no summary row: it needs the cublas and nosync variants and one cusync variant, "
                      "all passing their checks)\n",
                      mname.c_str(), (long long)M);
          continue;
        }
        std::printf("%-6s %6lld %8.3f %8.3f %18s %8.3f %8.3f %8.3f %8.3f %5.2f %9.3f %5.0f%% %6.0f%% %8.1f%s\n",
                    mname.c_str(), (long long)M, cb->ms, ns->ms, best->variant.c_str(), best->ms, best->speedup,
                    best->vsCublas, best->vsNosync, best->eff, best->tr.tailMs, 100 * best->tr.idle,
                    100 * best->tr.filled, best->tr.waitMeanUs, best->speedup < 1 ? "  (loses to the baseline)" : "");
        logBase += std::log(best->speedup), logCublas += std::log(best->vsCublas), logNosync += std::log(best->vsNosync);
        ++n;
      }
      if (n)
        std::printf("%-6s geomean speedup of the winning cusync variant: %.3f over the best baseline, %.3f over cuBLAS, "
                    "%.3f over nosync\n",
                    mname.c_str(), std::exp(logBase / n), std::exp(logCublas / n), std::exp(logNosync / n));
    }
  }

  // --chain: the same comparison for runs back to back (decode steps as a
  // server issues them), where a run's kernels meet the SMs the run before
  // leaves: per M the fastest cusync variant over the faster baseline.
  if (!checkOnly && o.chain > 0) {
    std::printf("\nsummary, chained runs (%d back to back between two events, us per run; speedup = baseline / "
                "variant)\n",
                o.chain);
    std::printf("%-6s %6s %8s %8s %18s %8s %8s\n", "model", "M", "cublas", "nosync", "winner", "us", "vs_base");
    for (const auto& mname : models) {
      double logBase = 0;
      int n = 0;
      for (int64_t M : tokens) {
        const SummaryRows p = summaryRows(rows, mname, M, &Row::chainUs);
        const Row *best = p.best, *cb = p.cublas, *ns = p.nosync;
        if (!p.complete()) continue;
        const double base = std::min(cb->chainUs, ns->chainUs), sp = base / best->chainUs;
        std::printf("%-6s %6lld %8.1f %8.1f %18s %8.1f %8.3f%s\n", mname.c_str(), (long long)M, cb->chainUs,
                    ns->chainUs, best->variant.c_str(), best->chainUs, sp, sp < 1 ? "  (loses to the baseline)" : "");
        logBase += std::log(sp);
        ++n;
      }
      if (n)
        std::printf("%-6s geomean speedup of the winning cusync variant, chained runs: %.3f over the best baseline\n",
                    mname.c_str(), std::exp(logBase / n));
    }
  }

  std::string csvText = bench::csvRow({"model", "M", "variant", "ms", "speedup", "speedup_vs_cublas",
                                       "speedup_vs_nosync", "roofline_eff", "rel_err", "ok", "chained_us_per_run"});
  for (const Row& r : rows)
    csvText += bench::csvRow({r.model, std::to_string(r.M), r.variant, bench::num("%.5f", r.ms),
                              bench::num("%.4f", r.speedup), bench::num("%.4f", r.vsCublas),
                              bench::num("%.4f", r.vsNosync), bench::num("%.4f", r.eff), bench::num("%.3e", r.err),
                              r.ok ? "1" : "0", bench::num("%.2f", r.chainUs)});
  nlohmann::ordered_json doc = bench::runDocument(prop.name, peak, bw, iters, o.graph, "the faster of cublas and nosync");
  doc["results"] = nlohmann::ordered_json::array();
  for (const Row& r : rows)
    doc["results"].push_back({{"model", r.model},
                              {"M", r.M},
                              {"variant", r.variant},
                              {"ms", r.ms},
                              {"speedup", r.speedup},
                              {"speedup_vs_cublas", r.vsCublas},
                              {"speedup_vs_nosync", r.vsNosync},
                              {"roofline_eff", r.eff},
                              {"rel_err", r.err},
                              {"ok", r.ok},
                              {"gemm1_tail_ms", r.tr.tailMs},
                              {"gemm1_idle", r.tr.idle},
                              {"tail_filled", r.tr.filled},
                              {"gemm2_start_ms", r.tr.g2StartMs},
                              {"wait_per_tile_us", r.tr.waitMeanUs},
                              {"wait_max_us", r.tr.waitMaxUs},
                              {"run_period_us", r.tr.periodUs},
                              {"run_gap_us", r.tr.gapUs},
                              {"chained_us_per_run", r.chainUs}});
  doc["singles"] = nlohmann::ordered_json::array();
  for (const Detail& t : details)
    doc["singles"].push_back({{"model", t.model},
                              {"M", t.M},
                              {"configs", t.configs},
                              {"ours_gemm1_ms", t.g1},
                              {"ours_gemm2_ms", t.g2},
                              {"cublas_gemm1_ms", t.cb1},
                              {"cublas_gemm2_ms", t.cb2},
                              {"roofline_ms", t.roofMs}});
  const bool written = bench::writeCsvAndJson("cusync-bench mlp", csv, csvText, json, doc.dump(2) + "\n");
  cudaStreamDestroy(s);
  if (!allOk) {
    std::fprintf(stderr, "cusync-bench mlp: some variants FAILED their check against cuBLAS\n");
    return 1;
  }
  return written ? 0 : 1;
}
