// cusync-bench conv: the convolution layer pairs of ResNet-38 and VGG-19
// (those of tools/torch_baselines.py) through every variant of
// conv_variants.h, side by side in one process: the baselines (cuDNN with its
// fastest algorithm per layer, our two convolutions in stream order) and the
// cusync variants, whose speedup over the faster baseline is the result; and
// each layer alone, ours against cuDNN (the target: cuDNN's time / ours at
// least 0.9). Every variant is checked before it is timed: cuDNN against a
// naive fp32 convolution on the first and last image, ours against cuDNN's
// whole output (against the naive one where the bench has no cuDNN). Medians
// of CUDA-event timings of back-to-back runs (or of CUDA graph replays with
// --graph) after warm-up, the variants and the layers alone interleaved run
// by run so that all see the same clock states; the operands rotate over
// copies that together exceed three times the L2 cache.
#include "bench_conv.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_ceilings.h"
#include "bench_json.h"
#include "bench_output.h"
#include "bench_util.cuh"
#include "conv_reference.cuh"
#include "conv_variants.h"
#include "trace_csv.h"
#ifdef CUSYNC_HAVE_CUDNN
#include "kernels/baseline/cudnn_conv.h"
#endif

using cusync_conv::Conv2dArgs;

namespace {

// The check's bound on ||out - ref|| / ||ref||, as the other benchmarks.
constexpr double kMaxErr = 2e-2;
// The single-layer target: cuDNN's time / ours at least this.
constexpr double kSingleTarget = 0.9;

struct Layer {
  int64_t C, K, H;  // input channels, output channels, input height = width
  int R, stride;
};

struct PairSpec {
  std::string model, name;
  Layer l1, l2;
  int64_t realC1;  // layer 1's channels before padding to a multiple of 8 (VGG's RGB input: 3)
};

// The pairs of tools/torch_baselines.py, in its order.
std::vector<PairSpec> allPairs() {
  std::vector<PairSpec> v;
  // ResNet-38: 3x3 residual pairs, C = K, at 56, 28, 14, 7; then the stride-2 transitions.
  using Size = std::pair<int64_t, int64_t>;  // channels, height
  for (const auto& [c, h] : {Size{64, 56}, Size{128, 28}, Size{256, 14}, Size{512, 7}})
    v.push_back({"resnet", "res" + std::to_string(h) + "-3x3", {c, c, h, 3, 1}, {c, c, h, 3, 1}, c});
  for (const auto& [c, h] : {Size{64, 56}, Size{128, 28}, Size{256, 14}})
    v.push_back({"resnet", "res" + std::to_string(h) + "-down", {c, 2 * c, h, 3, 2}, {2 * c, 2 * c, h / 2, 3, 1}, c});
  // VGG-19 at 224 x 224: blocks of (channels, size, layers), pairs of consecutive layers within a block.
  struct Block {
    int64_t k, h;
    int n;
  };
  int64_t cin = 3;
  for (const Block& b : {Block{64, 224, 2}, Block{128, 112, 2}, Block{256, 56, 4}, Block{512, 28, 4}, Block{512, 14, 4}}) {
    for (int i = 0; i + 1 < b.n; ++i) {
      const int64_t c1 = i == 0 ? cin : b.k;
      v.push_back({"vgg", "vgg" + std::to_string(b.h) + "-" + std::to_string(i + 1) + std::to_string(i + 2),
                   {std::max<int64_t>(8, (c1 + 7) / 8 * 8), b.k, b.h, 3, 1}, {b.k, b.k, b.h, 3, 1}, c1});
    }
    cin = b.k;
  }
  return v;
}

Conv2dArgs argsOf(const Layer& l, int64_t batch) {
  Conv2dArgs a;
  a.N = batch, a.H = a.W = l.H, a.C = l.C, a.K = l.K;
  a.R = a.S = l.R;
  a.padH = a.padW = l.R / 2;
  a.strideH = a.strideW = l.stride;
  a.epilogue = cusync_conv::ConvEpilogue::BiasRelu;
  return a;
}

int64_t inElems(const Conv2dArgs& a) { return a.N * a.H * a.W * a.C; }
int64_t wElems(const Conv2dArgs& a) { return a.K * a.R * a.S * a.C; }
int64_t outElems(const Conv2dArgs& a) { return a.pixels() * a.K; }
double flopsOf(const Conv2dArgs& a) { return 2.0 * double(a.pixels()) * a.K * a.C * a.R * a.S; }
// Bytes a layer alone moves at least: x, w, bias, y once (bf16).
double bytesOf(const Conv2dArgs& a) { return 2.0 * double(inElems(a) + wElems(a) + a.K + outElems(a)); }

std::string shapeText(const Conv2dArgs& a) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld -> %lld, %dx%d s%d", (long long)a.H, (long long)a.W, (long long)a.C,
                (long long)a.K, a.R, a.S, a.strideH);
  return buf;
}

// One copy of a pair's operands.
struct PairBuffers {
  void *x = nullptr, *w1 = nullptr, *b1 = nullptr, *h = nullptr, *w2 = nullptr, *b2 = nullptr, *y = nullptr;
};

ConvPairArgs pairArgs(const Conv2dArgs& a1, const Conv2dArgs& a2, const PairBuffers& b) {
  ConvPairArgs p{a1, a2};
  p.first.x = b.x, p.first.w = b.w1, p.first.bias = b.b1, p.first.y = b.h;
  p.second.x = b.h, p.second.w = b.w2, p.second.bias = b.b2, p.second.y = b.y;
  return p;
}

struct PairRow {
  std::string model, pair;
  int64_t batch;
  std::string variant;
  bool cusync;
  double ms, speedup, eff, err;  // speedup over the best baseline; eff: roofline ms / ms
  std::string against;           // what the check compared with: "cudnn" or "reference"
  bool ok;
};

struct SingleRow {
  std::string model, pair;
  int64_t batch;
  int layer;
  std::string variant, shape, plan;
  double ms, vsCudnn, eff;  // vsCudnn: cuDNN's conv + bias + ReLU ms / ms
};

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? NAN : std::exp(s / double(v.size()));
}

// Where a variant threw: its message on stderr, the row marked failed.
void report(const std::string& where, const std::exception& e) {
  std::fprintf(stderr, "[conv] %s: %s\n", where.c_str(), e.what());
}

}  // namespace

std::vector<std::string> convBenchPairs() {
  std::vector<std::string> names;
  for (const PairSpec& p : allPairs()) names.push_back(p.name);
  return names;
}

std::vector<std::string> convBenchVariants() {
  std::vector<std::string> names;
  for (const ConvVariant& v : convVariants()) names.push_back(v.name);
  return names;
}

std::string convBenchVariantHelp() {
  std::string s;
  for (const ConvVariant& v : convVariants())
    s += "  " + v.name + ": " + v.what + (v.built ? "" : " (not in this binary)") + "\n";
  return s;
}

int benchConv(const ConvBenchOptions& o) {
  // What this binary has, first: a machine without a GPU shows it too.
  if (!kHaveCudnn) std::printf("cuDNN not found at configure time: cudnn rows skipped\n");
  if (!kHaveConv) std::printf("built without the conv kernels (no target cusync_conv): nosync and cusync rows skipped\n");
  std::fflush(stdout);

  // The command line checked every name; here they become pairs and variants.
  std::vector<PairSpec> pairs;
  for (const PairSpec& p : allPairs()) {
    const bool named = std::find(o.pairs.begin(), o.pairs.end(), p.name) != o.pairs.end();
    const bool inModel = std::find(o.models.begin(), o.models.end(), p.model) != o.models.end() ||
                         std::find(o.models.begin(), o.models.end(), "both") != o.models.end();
    if (o.pairs.empty() ? inModel : named) pairs.push_back(p);
  }
  std::vector<const ConvVariant*> variants;
  for (const ConvVariant& v : convVariants())
    if (v.built && (o.variants.empty() || std::find(o.variants.begin(), o.variants.end(), v.name) != o.variants.end()))
      variants.push_back(&v);
  std::vector<const ConvSingle*> singles;
  for (const ConvSingle& v : convSingles())
    if (v.built) singles.push_back(&v);

  cudaDeviceProp prop{};
  if (!bench::commandFindsHopper("conv", &prop)) return 3;
  if (variants.empty() && singles.empty()) {
    std::fprintf(stderr, "cusync-bench conv: nothing to run: this binary has neither the conv kernels nor cuDNN\n");
    return 1;
  }
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  double peak = 0, bw = 0;
  if (!o.checkOnly) {
    peak = bench::measurePeakTflops(s, 20);
    bw = bench::measureBandwidthTBs(s, 20);
    std::printf("ceilings: cuBLAS bf16 GEMM 8192^3 %.0f TFLOP/s, device copy %.2f TB/s (read + write)\n", peak, bw);
  }
  std::fflush(stdout);

  ConvRunEnv env;
#ifdef CUSYNC_HAVE_CUDNN
  std::unique_ptr<cusync_baseline::CudnnConv> cudnn;
  try {
    cudnn = std::make_unique<cusync_baseline::CudnnConv>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cusync-bench conv: %s\n", e.what());
    return 1;
  }
  env.cudnn = cudnn.get();
#endif

  std::vector<PairRow> rows;
  std::vector<SingleRow> singleRows;
  bool allOk = true;
  const size_t l2 = size_t(prop.l2CacheSize);

  for (size_t pi = 0; pi < pairs.size(); ++pi) {
    const PairSpec& ps = pairs[pi];
    for (int64_t batch : o.batches) {
      std::fprintf(stderr, "[conv] %s %s batch %lld (%zu/%zu): checking and timing %zu variants, %zu single-layer runs\n",
                   ps.model.c_str(), ps.name.c_str(), (long long)batch, pi + 1, pairs.size(), variants.size(),
                   2 * singles.size());
      const Conv2dArgs a1 = argsOf(ps.l1, batch), a2 = argsOf(ps.l2, batch);
      const size_t xB = 2 * inElems(a1), w1B = 2 * wElems(a1), hB = 2 * outElems(a1), w2B = 2 * wElems(a2),
                   yB = 2 * outElems(a2);
      const size_t setBytes = xB + w1B + 2 * a1.K + hB + w2B + 2 * a2.K + yB;
      const int copies = int(std::min<size_t>(16, std::max<size_t>(1, (3 * l2 + setBytes - 1) / setBytes)));
      bench::Allocations mem;  // of this pair and batch
      std::vector<PairBuffers> bufs(copies);
      for (int c = 0; c < copies; ++c) {
        PairBuffers& b = bufs[c];
        b.x = mem.get(xB), b.w1 = mem.get(w1B), b.b1 = mem.get(2 * a1.K), b.h = mem.get(hB);
        b.w2 = mem.get(w2B), b.b2 = mem.get(2 * a2.K), b.y = mem.get(yB);
        const uint64_t seed = 100 * uint64_t(c) + 1;
        bench::fillRandomBf16(b.x, inElems(a1), seed, 1.f, s);
        bench::fillRandomBf16(b.w1, wElems(a1), seed + 1, 1.7f / std::sqrt(float(a1.C * a1.R * a1.S)), s);
        bench::fillRandomBf16(b.b1, a1.K, seed + 2, 0.1f, s);
        bench::fillRandomBf16(b.w2, wElems(a2), seed + 3, 1.7f / std::sqrt(float(a2.C * a2.R * a2.S)), s);
        bench::fillRandomBf16(b.b2, a2.K, seed + 4, 0.1f, s);
      }
      const ConvPairArgs run0 = pairArgs(a1, a2, bufs[0]);

      // The naive reference on the first and last image of copy 0.
      std::vector<int64_t> images = {0};
      if (batch > 1) images.push_back(batch - 1);
      bench::ConvGeom g1 = bench::geomOf(a1), g2 = bench::geomOf(a2);
      g1.N = g2.N = 1;
      const int64_t img1 = outElems(a1) / batch, img2 = outElems(a2) / batch, imgX = inElems(a1) / batch;
      void* hRef = mem.get(2 * img1);
      float* yRef = static_cast<float*>(mem.get(sizeof(float) * img2 * images.size()));
      for (size_t i = 0; i < images.size(); ++i) {
        const auto* x = static_cast<const __nv_bfloat16*>(bufs[0].x) + images[i] * imgX;
        CUDA_OK(bench::referenceConv(x, bufs[0].w1, bufs[0].b1, g1, true, nullptr, hRef, s));
        CUDA_OK(bench::referenceConv(hRef, bufs[0].w2, bufs[0].b2, g2, true, yRef + i * img2, nullptr, s));
      }
      auto errVsReference = [&](const void* y) {
        bench::RelErr e(s);
        for (size_t i = 0; i < images.size(); ++i)
          e.add(static_cast<const __nv_bfloat16*>(y) + images[i] * img2, yRef + i * img2, img2);
        const double v = e.value();
        CUDA_OK(e.status());
        return v;
      };
      // cuDNN's whole output, once it passed its own check: what ours is compared with.
      void* yCudnn = nullptr;

      // cuDNN's plans first (they run and time both layers on copy 0), so
      // that no planning happens inside a timed run or a graph capture.
      bool cudnnReady = true;
      try {
        prepareConvPair(run0, env, s);
      } catch (const std::exception& e) {
        report(ps.name + " batch " + std::to_string(batch) + " cuDNN plan", e);
        cudnnReady = false;
      }

      std::vector<double> err(variants.size(), INFINITY), ms(variants.size(), INFINITY);
      std::vector<std::string> against(variants.size());
      std::vector<bool> ok(variants.size(), false);
      std::vector<std::string> notFor(variants.size());  // why a variant does not run this pair
      for (size_t i = 0; i < variants.size(); ++i) {
        const ConvVariant& v = *variants[i];
        if (v.notFor && !(notFor[i] = v.notFor(run0)).empty()) continue;
        if (v.name == "cudnn" && !cudnnReady) {
          allOk = false;
          continue;
        }
        try {
          CUDA_OK(cudaMemsetAsync(bufs[0].h, 0xFF, hB, s));  // NaN: a result must be written to pass
          CUDA_OK(cudaMemsetAsync(bufs[0].y, 0xFF, yB, s));
          v.run(run0, env, s);
          bench::drain(s, ps.name + " batch " + std::to_string(batch) + " " + v.name + " (check)");
          CUDA_OK(cudaGetLastError());
          if (v.name == "cudnn" || !yCudnn) {
            err[i] = errVsReference(bufs[0].y);
            against[i] = "reference";
          } else {
            bench::RelErr e(s);
            e.add(bufs[0].y, static_cast<const __nv_bfloat16*>(yCudnn), outElems(a2));
            err[i] = e.value();
            CUDA_OK(e.status());
            against[i] = "cudnn";
          }
        } catch (const std::exception& e) {
          report(ps.name + " batch " + std::to_string(batch) + " " + v.name, e);
          err[i] = INFINITY;
        }
        ok[i] = err[i] < kMaxErr;
        if (!ok[i]) allOk = false;
        if (ok[i] && v.name == "cudnn" && !yCudnn) {
          yCudnn = mem.get(yB);
          CUDA_OK(cudaMemcpyAsync(yCudnn, bufs[0].y, yB, cudaMemcpyDeviceToDevice, s));
        }
      }

      // The layers alone: [layer][single].
      const Conv2dArgs* layers[2] = {&run0.first, &run0.second};
      std::vector<std::vector<double>> sms(2, std::vector<double>(singles.size(), INFINITY));
      auto singleUsable = [&](const ConvSingle& v) { return v.name == "ours" || cudnnReady; };
      if (!o.checkOnly) {
        // The pair's variants and each layer alone, interleaved
        // (bench::interleavedMediansMs).
        bench::Interleaved set(o.graph, s);
        auto failing = [&](const std::string& name, size_t variant) {  // variant SIZE_MAX: a layer alone
          return [&, name, variant](const char* phase, const std::string& what) {
            report(ps.name + " batch " + std::to_string(batch) + " " + name + " (" + phase + ")",
                   std::runtime_error(what));
            if (variant != SIZE_MAX) ok[variant] = false, allOk = false;
          };
        };
        for (size_t i = 0; i < variants.size(); ++i)
          if (ok[i])
            set.add([&, i](int c) { variants[i]->run(pairArgs(a1, a2, bufs[c]), env, s); }, copies, &ms[i],
                    failing(variants[i]->name, i));
        for (int l = 0; l < 2; ++l)
          for (size_t j = 0; j < singles.size(); ++j)
            if (singleUsable(*singles[j]))
              set.add(
                  [&, l, j](int c) {
                    const ConvPairArgs p = pairArgs(a1, a2, bufs[c]);
                    singles[j]->run(l == 0 ? p.first : p.second, env, s);
                  },
                  copies, &sms[l][j], failing("layer " + std::to_string(l + 1) + " " + singles[j]->name, SIZE_MAX));
        set.time(o.iters);
      }

      // Traced runs (--trace-dir), after the timing since tracing adds a few
      // stores per tile: each of our pair variants kTracedRuns times back to
      // back, launched (not as graphs), on consecutive operand copies.
      if (!o.traceDir.empty() && !o.checkOnly) {
        constexpr int kTracedRuns = 4;
        using cusync_gemm::TileTrace;
        // One record per stage tile; no configuration has tiles under 64 x 64.
        auto records = [](const Conv2dArgs& a) { return size_t((a.pixels() + 63) / 64) * size_t((a.K + 63) / 64); };
        const size_t n1 = records(a1), n2 = records(a2);
        std::vector<TileTrace*> t1(kTracedRuns), t2(kTracedRuns);
        for (int r = 0; r < kTracedRuns; ++r) {
          t1[r] = static_cast<TileTrace*>(mem.get(n1 * sizeof(TileTrace)));
          t2[r] = static_cast<TileTrace*>(mem.get(n2 * sizeof(TileTrace)));
        }
        for (size_t i = 0; i < variants.size(); ++i) {
          if (!ok[i] || variants[i]->name == "cudnn") continue;
          const std::string what = ps.name + " batch " + std::to_string(batch) + " " + variants[i]->name + " (traced runs)";
          try {
            for (int r = 0; r < kTracedRuns; ++r) {
              CUDA_OK(cudaMemsetAsync(t1[r], 0, n1 * sizeof(TileTrace), s));
              CUDA_OK(cudaMemsetAsync(t2[r], 0, n2 * sizeof(TileTrace), s));
            }
            bench::drain(s, what);
            for (int r = 0; r < kTracedRuns; ++r) {
              ConvPairArgs p = pairArgs(a1, a2, bufs[r % copies]);
              p.first.trace = t1[r], p.second.trace = t2[r];
              variants[i]->run(p, env, s);
            }
            bench::drain(s, what);
            std::vector<bench::RunTrace> runs;
            for (int r = 0; r < kTracedRuns; ++r) runs.emplace_back(bench::download(t1[r], n1), bench::download(t2[r], n2));
            bench::writeTraceCsv(o.traceDir + "/" + ps.model + "-" + ps.name + "-b" + std::to_string(batch) + "-" +
                                     variants[i]->name + ".csv",
                                 runs, "layer");
          } catch (const std::exception& e) {
            report(what, e);
            allOk = false;
          }
        }
      }

      // Rows: the pair's variants against the best baseline, the layers against cuDNN.
      double baseMs = INFINITY;
      std::string baseName = "-";
      for (size_t i = 0; i < variants.size(); ++i)
        if (!variants[i]->cusync && ok[i] && ms[i] < baseMs) baseMs = ms[i], baseName = variants[i]->name;
      const double pairFlops = flopsOf(a1) + flopsOf(a2);
      // The pair's bytes as a fused chain moves them: h stays on chip.
      const double pairBytes = 2.0 * double(inElems(a1) + wElems(a1) + a1.K + wElems(a2) + a2.K + outElems(a2));
      const double roofMs = o.checkOnly ? NAN : std::max(pairFlops / (peak * 1e12), pairBytes / (bw * 1e12)) * 1e3;
      const std::string padNote =
          ps.realC1 != a1.C ? " (C = " + std::to_string(ps.realC1) + " padded to " + std::to_string(a1.C) + ")" : "";
      std::printf("%s %s batch %lld: %s%s, then %s; %.2f GFLOP, roofline %.4f ms; best baseline %.4f ms (%s); "
                  "%d operand copies\n",
                  ps.model.c_str(), ps.name.c_str(), (long long)batch, shapeText(a1).c_str(), padNote.c_str(),
                  shapeText(a2).c_str(), pairFlops / 1e9, roofMs, baseMs, baseName.c_str(), copies);
      for (size_t i = 0; i < variants.size(); ++i) {
        const double sp = o.checkOnly ? NAN : baseMs / ms[i], eff = o.checkOnly ? NAN : roofMs / ms[i];
        if (!notFor[i].empty()) {
          std::printf("  %-14s n/a: %s\n", variants[i]->name.c_str(), notFor[i].c_str());
          continue;
        }
        if (!ok[i])
          std::printf("  %-14s FAILED check (err %.2e against the %s)\n", variants[i]->name.c_str(), err[i],
                      against[i].empty() ? "-" : against[i].c_str());
        else if (o.checkOnly)
          std::printf("  %-14s err %.2e (against the %s) ok\n", variants[i]->name.c_str(), err[i], against[i].c_str());
        else
          std::printf("  %-14s %9.4f ms  speedup %5.3f  roofline eff %4.2f  err %.1e (against the %s)\n",
                      variants[i]->name.c_str(), ms[i], sp, eff, err[i], against[i].c_str());
        rows.push_back({ps.model, ps.name, batch, variants[i]->name, variants[i]->cusync, ok[i] ? ms[i] : NAN,
                        ok[i] ? sp : NAN, ok[i] ? eff : NAN, err[i], against[i], bool(ok[i])});
      }
      if (!o.checkOnly) {
        for (int l = 0; l < 2; ++l) {
          const Conv2dArgs& a = *layers[l];
          double cudnnMs = NAN;
          for (size_t j = 0; j < singles.size(); ++j)
            if (singles[j]->name == "cudnn" && std::isfinite(sms[l][j])) cudnnMs = sms[l][j];
          const double roofL = std::max(flopsOf(a) / (peak * 1e12), bytesOf(a) / (bw * 1e12)) * 1e3;
          std::printf("  layer %d %s:", l + 1, shapeText(a).c_str());
          for (size_t j = 0; j < singles.size(); ++j) {
            const double t = std::isfinite(sms[l][j]) ? sms[l][j] : NAN;
            const std::string plan = singles[j]->name == "ours" ? std::string()
                                                                : cudnnPlanOf(a, singles[j]->name == "cudnn", env);
            std::printf(" %s %.4f ms%s", singles[j]->name.c_str(), t, plan.empty() ? "" : (" [" + plan + "]").c_str());
            if (singles[j]->name == "ours" && std::isfinite(cudnnMs))
              std::printf(" (cuDNN / ours %.3f%s)", cudnnMs / t, cudnnMs / t < kSingleTarget ? " MISS" : "");
            std::printf(j + 1 < singles.size() ? "," : "\n");
            singleRows.push_back({ps.model, ps.name, batch, l + 1, singles[j]->name, shapeText(a), plan, t,
                                  cudnnMs / t, roofL / t});
          }
        }
      }
      std::fflush(stdout);
    }
  }

  // Summary: per model a table of the pairs, and geomeans.
  if (!o.checkOnly) {
    std::printf("\nsummary (%s; ms per pair run; base = the faster of the baselines (cudnn, nosync); speedup = base / "
                "the best cusync variant; eff = its roofline ms / ms; L1, L2 = cuDNN conv + bias + ReLU time / ours "
                "per layer, target >= %.2f)\n",
                o.graph ? "CUDA graph replays" : "back-to-back launches", kSingleTarget);
    std::vector<std::string> models;
    for (const PairSpec& p : pairs)
      if (std::find(models.begin(), models.end(), p.model) == models.end()) models.push_back(p.model);
    for (const std::string& model : models) {
      std::printf("%-6s %-12s %5s", "model", "pair", "batch");
      for (const ConvVariant* v : variants) std::printf(" %10s", v->name.c_str());
      std::printf(" %14s %7s %5s %6s %6s\n", "best_cusync", "speedup", "eff", "L1", "L2");
      std::vector<double> speedups, nosyncOverCudnn, singleRatios;
      int misses = 0, layers = 0;
      for (const PairSpec& p : pairs) {
        if (p.model != model) continue;
        for (int64_t batch : o.batches) {
          std::printf("%-6s %-12s %5lld", model.c_str(), p.name.c_str(), (long long)batch);
          const PairRow* best = nullptr;
          double cudnnMs = NAN, nosyncMs = NAN;
          for (const ConvVariant* v : variants) {
            bool ran = false;  // a variant that does not apply to the pair has no row
            for (const PairRow& r : rows)
              if (r.model == model && r.pair == p.name && r.batch == batch && r.variant == v->name) {
                ran = true;
                std::printf(" %10.4f", r.ms);
                if (r.ok && r.cusync && (!best || r.ms < best->ms)) best = &r;
                if (r.ok && r.variant == "cudnn") cudnnMs = r.ms;
                if (r.ok && r.variant == "nosync") nosyncMs = r.ms;
              }
            if (!ran) std::printf(" %10s", "n/a");
          }
          if (best) {
            std::printf(" %14s %7.3f %5.2f", best->variant.c_str(), best->speedup, best->eff);
            if (std::isfinite(best->speedup)) speedups.push_back(best->speedup);
          } else {
            std::printf(" %14s %7s %5s", "-", "-", "-");
          }
          if (std::isfinite(cudnnMs / nosyncMs)) nosyncOverCudnn.push_back(cudnnMs / nosyncMs);
          for (int l = 1; l <= 2; ++l) {
            double ratio = NAN;
            for (const SingleRow& r : singleRows)
              if (r.model == model && r.pair == p.name && r.batch == batch && r.layer == l && r.variant == "ours")
                ratio = r.vsCudnn;
            std::printf(" %5.3f%s", ratio, std::isfinite(ratio) && ratio < kSingleTarget ? "*" : " ");
            if (std::isfinite(ratio)) {
              singleRatios.push_back(ratio), ++layers;
              misses += ratio < kSingleTarget;
            }
          }
          std::printf("\n");
        }
      }
      if (!speedups.empty())
        std::printf("%-6s geomean speedup of the best cusync variant over the best baseline: %.3f (%zu points)\n",
                    model.c_str(), geomean(speedups), speedups.size());
      else
        std::printf("%-6s no cusync variant in this run: no speedup to report\n", model.c_str());
      if (!nosyncOverCudnn.empty())
        std::printf("%-6s geomean cudnn / nosync (our two convolutions against cuDNN's): %.3f\n", model.c_str(),
                    geomean(nosyncOverCudnn));
      if (layers)
        std::printf("%-6s single layers: geomean cuDNN / ours %.3f; %d of %d layer runs under the %.2f target (*)\n",
                    model.c_str(), geomean(singleRatios), misses, layers, kSingleTarget);
    }
  }

  // CSV: the pairs' variants ("pair") and the layers alone ("layer1", "layer2"),
  // whose speedup is cuDNN's conv + bias + ReLU time / the row's.
  std::string csvText =
      bench::csvRow({"model", "pair", "batch", "what", "variant", "ms", "speedup", "roofline_eff", "rel_err", "ok"});
  for (const PairRow& r : rows)
    csvText += bench::csvRow({r.model, r.pair, std::to_string(r.batch), "pair", r.variant, bench::num("%.5f", r.ms),
                              bench::num("%.4f", r.speedup), bench::num("%.4f", r.eff), bench::num("%.3e", r.err),
                              r.ok ? "1" : "0"});
  for (const SingleRow& r : singleRows)
    csvText += bench::csvRow({r.model, r.pair, std::to_string(r.batch), "layer" + std::to_string(r.layer), r.variant,
                              bench::num("%.5f", r.ms), bench::num("%.4f", r.vsCudnn), bench::num("%.4f", r.eff), "",
                              std::isfinite(r.ms) ? "1" : "0"});
  nlohmann::ordered_json doc = bench::runDocument(prop.name, peak, bw, o.iters, o.graph, "the faster of cudnn and nosync");
  doc["single_target"] = kSingleTarget;
  doc["cudnn"] = kHaveCudnn;
  doc["conv_kernels"] = kHaveConv;
  doc["results"] = nlohmann::ordered_json::array();
  for (const PairRow& r : rows)
    doc["results"].push_back({{"model", r.model},
                              {"pair", r.pair},
                              {"batch", r.batch},
                              {"variant", r.variant},
                              {"cusync", r.cusync},
                              {"ms", r.ms},
                              {"speedup", r.speedup},
                              {"roofline_eff", r.eff},
                              {"rel_err", r.err},
                              {"checked_against", r.against},
                              {"ok", r.ok}});
  doc["singles"] = nlohmann::ordered_json::array();
  for (const SingleRow& r : singleRows)
    doc["singles"].push_back({{"model", r.model},
                              {"pair", r.pair},
                              {"batch", r.batch},
                              {"layer", r.layer},
                              {"shape", r.shape},
                              {"variant", r.variant},
                              {"ms", r.ms},
                              {"cudnn_over_ms", r.vsCudnn},
                              {"roofline_eff", r.eff},
                              {"cudnn_plan", r.plan}});
  const bool written = bench::writeCsvAndJson("cusync-bench conv", o.csv, csvText, o.json, doc.dump(2) + "\n");
  cudaStreamDestroy(s);
  if (!allOk) {
    std::fprintf(stderr, "cusync-bench conv: some variants FAILED their check\n");
    return 1;
  }
  return written ? 0 : 1;
}
