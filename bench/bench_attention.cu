// cusync-bench attention: one step of the GPT-3 175B and LLaMA 65B attention
// blocks (one GPU of tensor parallel 8, bf16: QKV projection appending the
// new tokens' keys and values to the KV cache, causal attention over the
// cache, output projection) at the decode and prefill shapes of
// tools/torch_baselines.py, in every variant side by side in one process:
// the baselines (the cuBLAS block; our three kernels in stream order), the
// cusync block (rowsync), whose speedup over the faster baseline is the
// result, and our attention kernel alone (the attention stage, for
// tools/plot_attention.py to compare with PyTorch's SDPA). Every variant is
// checked before it is timed against the cuBLAS block run on the GPU with an
// fp32 attention output (attention_reference.h). Medians of CUDA-event
// timings of back-to-back runs (or of CUDA graph replays with --graph) after
// warm-up, the variants and the projections alone interleaved run by run so
// that all see the same clock states; the operands rotate over copies
// that together exceed three times the L2 cache (a decode step's cache
// alone fits in it). The peak GEMM rate and memory bandwidth of the roofline
// are measured in the same run.
#include "bench_attention.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention_reference.h"
#include "bench_ceilings.h"
#include "bench_json.h"
#include "bench_output.h"
#include "bench_util.cuh"
#include "rel_err.cuh"
#include "kernels/attention/block_plan.h"
#include "kernels/baseline/cublaslt_gemm.h"
#ifdef CUSYNC_HAVE_ATTENTION
#include "kernels/attention/attention.h"
#include "kernels/attention/block.h"
#endif

namespace {

#ifdef CUSYNC_HAVE_ATTENTION
constexpr bool kHaveAttention = true;
#else
constexpr bool kHaveAttention = false;
#endif

// The check's bound on ||out - ref|| / ||ref||, as the other benchmarks.
constexpr double kMaxErr = 2e-2;
constexpr int kD = bench::kAttentionHeadDim;
// Operands: x uniform in +-1 and Wqkv in +-4 / sqrt(hidden) give q, k and v
// of standard deviation 1.33 (cached keys and values alike: +-2.3), so that
// scores spread by about 1.8 and the softmax is peaked enough for a wrong or
// missing key to show in the check.
constexpr float kQkvWeightScale = 4.f, kKvScale = 2.3f;

struct VariantInfo {
  const char* name;
  bool ours;   // needs the attention kernels (target cusync_attention)
  bool block;  // a whole step; else the attention stage alone
  const char* what;
};

const std::vector<VariantInfo>& variantTable() {
  static const std::vector<VariantInfo> v = {
      {"stream", true, true,
       "our QKV GEMM, attention kernel and output GEMM in stream order, no cusync (AttentionBlock Stream):\n"
       "    our own baseline"},
      {"rowsync", true, true,
       "the block as a cusync pipeline (AttentionBlock RowSync): an attention tile waits for the rows of the\n"
       "    QKV projection it reads, the output GEMM's k-blocks for the attention's heads"},
      {"attention", true, false,
       "our attention kernel alone (cusync_attn::attention): the attention stage, compared with PyTorch's\n"
       "    SDPA by tools/plot_attention.py"},
      {"cublas", false, true,
       "cuBLASLt QKV GEMM, the bench's fp32 reference attention, cuBLASLt output GEMM: the GEMM part of the\n"
       "    vendor baseline (its attention is no tuned kernel; PyTorch's whole block comes from\n"
       "    tools/torch_baselines.py)"},
  };
  return v;
}

struct Shape {
  int64_t M, L;
  const char* phase() const { return L == 0 ? "prefill" : "decode"; }
};

// The selected shape sets, --m and --l replacing their M and L values; each
// (M, L) once, in tools/torch_baselines.py's order.
std::vector<Shape> shapesOf(const AttentionBenchOptions& o) {
  std::vector<Shape> v;
  auto add = [&](const std::vector<int64_t>& ms, const std::vector<int64_t>& ls) {
    for (int64_t L : o.ls.empty() ? ls : o.ls)
      for (int64_t M : o.ms.empty() ? ms : o.ms)
        if (std::none_of(v.begin(), v.end(), [&](const Shape& s) { return s.M == M && s.L == L; })) v.push_back({M, L});
  };
  if (o.shapes != "prefill") add(kDecodeMs, kDecodeLs);
  if (o.shapes != "decode") add(kPrefillMs, {0});
  return v;
}

// FLOPs and the bytes a step moves at least, as tools/torch_baselines.py
// counts them: both projections, attention (QK^T and PV over every causal
// (query, key) pair); the weights, the keys and values read from the cache,
// x and O (Q, the new keys and values and the attention output left out, as
// a fused block would keep them on chip). The stage alone: Q, the cache
// read and its output.
struct Work {
  double flops, bytes, attnFlops, attnBytes;
};
Work workOf(const cusync_attn::BlockModel& m, int64_t M, int64_t L) {
  const double W = double(m.width()), H = double(m.hidden), pairs = double(M) * L + double(M) * (M + 1) / 2;
  Work w;
  w.attnFlops = 4.0 * kD * m.heads * pairs;
  w.flops = 2.0 * M * H * 3 * W + w.attnFlops + 2.0 * M * W * H;
  w.bytes = 2.0 * (3 * W * H + H * W + 2 * W * double(L + M) + 2.0 * M * H);
  w.attnBytes = 2.0 * (2.0 * M * W + 2 * W * double(L + M));
  return w;
}

// One copy of a step's operands (bf16); weights shared by copies c, c + nW, ...
struct CopyBuffers {
  void *x, *wqkv, *wo, *q, *kv, *attn, *out, *qkv, *workspace;
};

struct Row {
  std::string model;
  int64_t M, L;
  std::string phase, variant;
  bool block;
  double ms, speedup, vsCublas, vsStream, eff, flops, bytes;
  double errOut, errAttn, errCache;  // NaN where the variant does not write it
  bool ok;
};

struct ShapeInfo {
  std::string model;
  int64_t M, L;
  std::string phase, plan;
  int copies;
  double roofMs, attnRoofMs;
  // The projections alone: our GEMMs as the stream variant runs them, cuBLAS's as the cublas variant.
  double oursQkvMs, oursWoMs, cublasQkvMs, cublasWoMs;
};

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? NAN : std::exp(s / double(v.size()));
}

void report(const std::string& where, const std::exception& e) {
  std::fprintf(stderr, "[attention] %s: %s\n", where.c_str(), e.what());
}

// ||out - ref|| / ||ref|| of n bf16 values against fp32 or bf16 ones.
template <class Ref>
double relErr(const void* out, const Ref* ref, int64_t n, cudaStream_t s) {
  bench::RelErr e(s);
  e.add(out, ref, n);
  const double v = e.value();
  CUDA_OK(e.status());
  return v;
}

}  // namespace

std::vector<std::string> attentionBenchVariants() {
  std::vector<std::string> names;
  for (const VariantInfo& v : variantTable()) names.push_back(v.name);
  return names;
}

std::string attentionBenchVariantHelp() {
  std::string s;
  for (const VariantInfo& v : variantTable())
    s += std::string("  ") + v.name + ": " + v.what + (v.ours && !kHaveAttention ? " (not in this binary)" : "") + "\n";
  return s;
}

int benchAttention(const AttentionBenchOptions& o) {
  if (!kHaveAttention)
    std::printf("built without the attention kernels (no target cusync_attention): stream, rowsync and attention "
                "rows skipped\n");
  std::fflush(stdout);
  // The command line checked every name; "both" stands for the two models.
  std::vector<cusync_attn::BlockModel> models;
  for (const cusync_attn::BlockModel& m : {cusync_attn::kGpt3Block, cusync_attn::kLlamaBlock})
    for (const std::string& name : o.models)
      if (name == m.name || name == "both") {
        models.push_back(m);
        break;
      }
  std::vector<const VariantInfo*> variants;
  for (const VariantInfo& v : variantTable())
    if ((kHaveAttention || !v.ours) &&
        (o.variants.empty() || std::find(o.variants.begin(), o.variants.end(), v.name) != o.variants.end()))
      variants.push_back(&v);
  const std::vector<Shape> shapes = shapesOf(o);

  cudaDeviceProp prop{};
  if (!bench::commandFindsHopper("attention", &prop)) return 3;
  if (variants.empty()) {
    std::fprintf(stderr, "cusync-bench attention: nothing to run: the variants asked for need the attention kernels, "
                         "which this binary lacks\n");
    return 1;
  }
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int sms = prop.multiProcessorCount;
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  double peak = 0, bw = 0;
  if (!o.checkOnly) {
    peak = bench::measurePeakTflops(s, 20);
    bw = bench::measureBandwidthTBs(s, 20);
    std::printf("ceilings: cuBLAS bf16 GEMM 8192^3 %.0f TFLOP/s, device copy %.2f TB/s (read + write)\n", peak, bw);
  }
  std::fflush(stdout);

  const cusync_baseline::LtContext lt;
  std::vector<Row> rows;
  std::vector<ShapeInfo> infos;
  bool allOk = true;
  const double l2 = double(prop.l2CacheSize);
  size_t step = 0;

  for (const cusync_attn::BlockModel& model : models) {
    const int64_t W = model.width(), Hd = model.hidden;
    for (const Shape& sh : shapes) {
      const int64_t M = sh.M, L = sh.L, cap = L + M;
      const std::string where = std::string(model.name) + " M=" + std::to_string(M) + " L=" + std::to_string(L);
      // Copies: of the weights, enough that a whole step's operands exceed
      // three times L2 over the rotation; of the rest, that the attention
      // stage's do (a multiple of the weights' copies).
      const double weightBytes = 2.0 * (3 * W * Hd + Hd * W);
      const double actBytes = 2.0 * (double(M) * Hd * 2 + double(cap) * 2 * W + double(M) * W * 2 + double(M) * 3 * W);
      const Work work = workOf(model, M, L);
      auto copiesFor = [&](double set) { return int(std::min(16.0, std::max(1.0, std::ceil(3 * l2 / set)))); };
      const int nW = copiesFor(weightBytes + actBytes);
      int n = std::max(nW, copiesFor(work.attnBytes));
      n = (n + nW - 1) / nW * nW;

      bench::Allocations mem;
      std::vector<CopyBuffers> bufs(n);
      for (int c = 0; c < n; ++c) {
        CopyBuffers& b = bufs[c];
        const uint64_t seed = 100 * uint64_t(c) + 1;
        if (c < nW) {
          b.wqkv = mem.get(size_t(3 * W * Hd) * 2), b.wo = mem.get(size_t(Hd * W) * 2);
          bench::fillRandomBf16(b.wqkv, size_t(3 * W * Hd), seed, kQkvWeightScale / std::sqrt(float(Hd)), s);
          bench::fillRandomBf16(b.wo, size_t(Hd * W), seed + 1, 1.7f / std::sqrt(float(W)), s);
        } else {
          b.wqkv = bufs[c % nW].wqkv, b.wo = bufs[c % nW].wo;
        }
        b.x = mem.get(size_t(M * Hd) * 2), b.q = mem.get(size_t(M * W) * 2), b.kv = mem.get(size_t(cap * 2 * W) * 2);
        b.attn = mem.get(size_t(M * W) * 2), b.out = mem.get(size_t(M * Hd) * 2), b.qkv = mem.get(size_t(M * 3 * W) * 2);
        b.workspace = nullptr;
        bench::fillRandomBf16(b.x, size_t(M * Hd), seed + 2, 1.f, s);
        // The cached rows, and inputs for the attention alone (the block variants overwrite q and rows [L, L + M)).
        bench::fillRandomBf16(b.kv, size_t(cap * 2 * W), seed + 3, kKvScale, s);
        bench::fillRandomBf16(b.q, size_t(M * W), seed + 4, kKvScale, s);
      }
      const CopyBuffers& b0 = bufs[0];

#ifdef CUSYNC_HAVE_ATTENTION
      auto bufferOf = [&](const CopyBuffers& b) {
        cusync_attn::BlockBuffers bb;
        bb.x = b.x, bb.wqkv = b.wqkv, bb.wo = b.wo, bb.q = b.q, bb.kv = b.kv, bb.capacity = cap, bb.attn = b.attn,
        bb.out = b.out;
        return bb;
      };
      auto attentionArgsOf = [&](const CopyBuffers& b) {
        cusync_attn::AttentionArgs a;
        a.M = M, a.L = L, a.heads = model.heads, a.capacity = cap, a.Q = b.q, a.kv = b.kv, a.out = b.attn;
        a.workspace = b.workspace;
        return a;
      };
#endif
      // How our kernels cut this step (the same plan for both block variants and the attention alone),
      // and each copy's projections as the stream variant runs them.
      std::string plan = "cuBLAS only";
      std::vector<cusync_gemm::GemmArgs> oursQkv, oursWo;
#ifdef CUSYNC_HAVE_ATTENTION
      try {
        for (const CopyBuffers& b : bufs) {
          const cusync_attn::BlockPlan p = cusync_attn::planBlock(model, M, L, sms, bufferOf(b));
          oursQkv.push_back(p.qkv), oursWo.push_back(p.wo);
        }
        const cusync_gemm::GemmArgs &qkv = oursQkv[0], &wo = oursWo[0];
        const cusync_attn::AttentionPlan ap = cusync_attn::planAttention(attentionArgsOf(b0), sms);
        plan = std::string("qkv ") + cusync_gemm::toString(qkv.config) + ", wo " +
               cusync_gemm::toString(wo.config) + ", attention " + std::to_string(ap.rowsPerTile) + "-row tiles x " +
               std::to_string(ap.splits) + " splits";
        const size_t wsBytes = cusync_attn::attentionWorkspaceBytes(attentionArgsOf(b0), sms);
        if (wsBytes > 0)
          for (CopyBuffers& b : bufs) {
            b.workspace = mem.get(wsBytes);
            CUDA_OK(cudaMemsetAsync(b.workspace, 0, wsBytes, s));
          }
      } catch (const std::exception& e) {
        plan = std::string("no plan: ") + e.what();
        oursQkv.clear(), oursWo.clear();
      }
#endif
      ++step;
      std::fprintf(stderr, "[attention] %s %s (%zu/%zu): checking and timing %zu variants; %s; %d operand copies\n",
                   where.c_str(), sh.phase(), step, models.size() * shapes.size(), variants.size(), plan.c_str(), n);

      // The reference: the cuBLAS block on copy 0's operands, into buffers of its own.
      void* refQkv = mem.get(size_t(M * 3 * W) * 2);
      void* refKv = mem.get(size_t(cap * 2 * W) * 2);
      void* refAttn = mem.get(size_t(M * W) * 2);
      float* refAttnF = static_cast<float*>(mem.get(size_t(M * W) * sizeof(float)));
      void* refOut = mem.get(size_t(M * Hd) * 2);
      const size_t rowBytes = size_t(2 * W) * 2;
      std::unique_ptr<bench::CublasAttentionBlock> cublas;
      try {
        cublas = std::make_unique<bench::CublasAttentionBlock>(lt, Hd, model.heads, M, L);
        CUDA_OK(cudaMemcpyAsync(refKv, b0.kv, size_t(L) * rowBytes, cudaMemcpyDeviceToDevice, s));
        cublas->run({b0.x, b0.wqkv, b0.wo, refQkv, refKv, refAttn, refAttnF, refOut}, s);
        bench::drain(s, where + " the cuBLAS reference");
      } catch (const std::exception& e) {
        report(where + " the cuBLAS reference", e);
        cublas.reset();
      }
      char* newRows0 = static_cast<char*>(b0.kv) + size_t(L) * rowBytes;
      const char* refNewRows = static_cast<const char*>(refKv) + size_t(L) * rowBytes;

      // Each variant: built (our blocks, one per copy), checked on copy 0, then timed.
      std::vector<std::function<void(int)>> runs(variants.size());
#ifdef CUSYNC_HAVE_ATTENTION
      std::vector<std::unique_ptr<cusync_attn::AttentionBlock>> blocks;  // kept alive while `runs` use them
#endif
      std::vector<Row> shapeRows;
      for (const VariantInfo* v : variants)
        shapeRows.push_back({model.name, M, L, sh.phase(), v->name, v->block, INFINITY, NAN, NAN, NAN, NAN,
                             v->block ? work.flops : work.attnFlops, v->block ? work.bytes : work.attnBytes, NAN, NAN,
                             NAN, false});
      for (size_t i = 0; i < variants.size(); ++i) {
        const std::string name = variants[i]->name;
        Row& r = shapeRows[i];
        try {
          if (!cublas) throw std::runtime_error("no reference: the cuBLAS block failed");
          if (name == "cublas") {
            runs[i] = [&](int c) {
              const CopyBuffers& b = bufs[c];
              cublas->run({b.x, b.wqkv, b.wo, b.qkv, b.kv, b.attn, nullptr, b.out}, s);
            };
          }
#ifdef CUSYNC_HAVE_ATTENTION
          if (name == "stream" || name == "rowsync") {
            const auto variant = name == "stream" ? cusync_attn::BlockVariant::Stream : cusync_attn::BlockVariant::RowSync;
            const size_t first = blocks.size();
            for (const CopyBuffers& b : bufs)
              blocks.push_back(std::make_unique<cusync_attn::AttentionBlock>(model, M, L, variant, bufferOf(b)));
            runs[i] = [&, first](int c) { blocks[first + size_t(c)]->run(s); };
          }
          if (name == "attention") {
            runs[i] = [&](int c) { cusync_attn::attention(attentionArgsOf(bufs[c]), s); };
            // Its inputs: the reference's Q and new cache rows.
            CUDA_OK(cudaMemcpy2DAsync(b0.q, size_t(W) * 2, refQkv, size_t(3 * W) * 2, size_t(W) * 2, size_t(M),
                                      cudaMemcpyDeviceToDevice, s));
            CUDA_OK(cudaMemcpyAsync(newRows0, refNewRows, size_t(M) * rowBytes, cudaMemcpyDeviceToDevice, s));
          }
#endif
          // NaN (0xFFFF) everywhere the variant writes: a result must be written to pass.
          CUDA_OK(cudaMemsetAsync(b0.attn, 0xFF, size_t(M * W) * 2, s));
          if (r.block) {
            CUDA_OK(cudaMemsetAsync(b0.out, 0xFF, size_t(M * Hd) * 2, s));
            CUDA_OK(cudaMemsetAsync(newRows0, 0xFF, size_t(M) * rowBytes, s));
            // Q goes to its buffer in our blocks, to the projection's scratch in cuBLAS's.
            if (name == "cublas") CUDA_OK(cudaMemsetAsync(b0.qkv, 0xFF, size_t(M * 3 * W) * 2, s));
            else CUDA_OK(cudaMemsetAsync(b0.q, 0xFF, size_t(M * W) * 2, s));
          }
          runs[i](0);
          bench::drain(s, where + " " + name + " (check)");
          CUDA_OK(cudaGetLastError());
          r.errAttn = relErr(b0.attn, refAttnF, M * W, s);
          double err = r.errAttn;
          if (r.block) {
            r.errOut = relErr(b0.out, static_cast<const __nv_bfloat16*>(refOut), M * Hd, s);
            r.errCache = relErr(newRows0, reinterpret_cast<const __nv_bfloat16*>(refNewRows), M * 2 * W, s);
            err = std::max({err, r.errOut, r.errCache});
          }
          r.ok = err < kMaxErr;  // false for NaN
        } catch (const std::exception& e) {
          report(where + " " + name, e);
          r.ok = false;
        }
        if (!r.ok) allOk = false;
      }

      ShapeInfo info{model.name, M, L, sh.phase(), plan, n, NAN, NAN, NAN, NAN, NAN, NAN};
      if (!o.checkOnly) {
        info.roofMs = std::max(work.flops / (peak * 1e12), work.bytes / (bw * 1e12)) * 1e3;
        info.attnRoofMs = std::max(work.attnFlops / (peak * 1e12), work.attnBytes / (bw * 1e12)) * 1e3;
        // The variants and the projections alone (where their variant passed
        // its check: the cuBLAS block's GEMMs are the part of the vendor
        // baseline this bench times for real, its attention is the
        // reference), interleaved (bench::interleavedMediansMs).
        bench::Interleaved set(o.graph, s);
        auto failing = [&](const std::string& name, size_t row) {  // row SIZE_MAX: a projection
          return [&, name, row](const char* phase, const std::string& what) {
            report(where + " " + name + " (" + phase + ")", std::runtime_error(what));
            if (row != SIZE_MAX) shapeRows[row].ok = false, allOk = false;
          };
        };
        for (size_t i = 0; i < variants.size(); ++i)
          if (shapeRows[i].ok) set.add(runs[i], n, &shapeRows[i].ms, failing(variants[i]->name, i));
        auto passed = [&](const char* name) {
          return std::any_of(shapeRows.begin(), shapeRows.end(), [&](const Row& r) { return r.variant == name && r.ok; });
        };
        if (passed("stream") && !oursQkv.empty()) {
          set.add([&](int c) { cusync_gemm::gemm(oursQkv[c], s); }, n, &info.oursQkvMs, failing("our qkv", SIZE_MAX));
          set.add([&](int c) { cusync_gemm::gemm(oursWo[c], s); }, n, &info.oursWoMs, failing("our wo", SIZE_MAX));
        }
        if (passed("cublas")) {
          set.add([&](int c) { cublas->qkvGemm().run(bufs[c].x, bufs[c].wqkv, bufs[c].qkv, s); }, n,
                  &info.cublasQkvMs, failing("cublas qkv", SIZE_MAX));
          set.add([&](int c) { cublas->woGemm().run(bufs[c].attn, bufs[c].wo, bufs[c].out, s); }, n,
                  &info.cublasWoMs, failing("cublas wo", SIZE_MAX));
        }
        set.time(o.iters);
      }

      // Speedups of the block variants over the best baseline (the faster of cublas and stream).
      double cublasMs = INFINITY, streamMs = INFINITY;
      for (const Row& r : shapeRows)
        if (r.ok && r.variant == "cublas") cublasMs = r.ms;
        else if (r.ok && r.variant == "stream") streamMs = r.ms;
      const double baseMs = std::min(cublasMs, streamMs);
      const char* baseName = !std::isfinite(baseMs) ? "-" : streamMs <= cublasMs ? "stream" : "cublas";
      for (Row& r : shapeRows) {
        if (!r.ok || o.checkOnly) {
          r.ms = NAN;
          continue;
        }
        r.eff = (r.block ? info.roofMs : info.attnRoofMs) / r.ms;
        if (r.block) r.speedup = baseMs / r.ms, r.vsCublas = cublasMs / r.ms, r.vsStream = streamMs / r.ms;
      }

      if (o.checkOnly) {
        std::printf("%s %s (%s):\n", where.c_str(), sh.phase(), plan.c_str());
      } else {
        std::printf("%s %s (%s; %d operand copies): %.2f GFLOP, %.1f MB; roofline %.4f ms, attention stage alone "
                    "%.4f ms; projections alone: ours qkv %.4f + wo %.4f ms, cuBLAS qkv %.4f + wo %.4f ms; best "
                    "baseline %.4f ms (%s)\n",
                    where.c_str(), sh.phase(), plan.c_str(), n, work.flops / 1e9, work.bytes / 1e6, info.roofMs,
                    info.attnRoofMs, info.oursQkvMs, info.oursWoMs, info.cublasQkvMs, info.cublasWoMs, baseMs,
                    baseName);
      }
      for (const Row& r : shapeRows) {
        char errs[96];
        if (r.block) std::snprintf(errs, sizeof errs, "err O %.1e, attention %.1e, cache %.1e", r.errOut, r.errAttn, r.errCache);
        else std::snprintf(errs, sizeof errs, "err attention %.1e", r.errAttn);
        if (!r.ok) std::printf("  %-10s FAILED check (%s)\n", r.variant.c_str(), errs);
        else if (o.checkOnly) std::printf("  %-10s ok (%s)\n", r.variant.c_str(), errs);
        else if (r.block)
          std::printf("  %-10s %9.4f ms  speedup %5.3f  roofline eff %4.2f  %s\n", r.variant.c_str(), r.ms, r.speedup,
                      r.eff, errs);
        else
          std::printf("  %-10s %9.4f ms  (the stage alone)  roofline eff %4.2f  %s\n", r.variant.c_str(), r.ms, r.eff,
                      errs);
      }
      std::fflush(stdout);
      rows.insert(rows.end(), shapeRows.begin(), shapeRows.end());
      infos.push_back(info);
      // The blocks (their stages' memory) and the buffers go once the GPU is done with them.
      bench::drain(s, where + " (the end of the shape)");
    }
  }

  // Summary: per model and shape the variants' times, the cusync block's
  // speedup over the best baseline; geomeans per model over decode and over
  // prefill shapes.
  if (!o.checkOnly) {
    std::printf("\nsummary (%s; ms per step; base = the faster of cublas and stream; speedup = base / rowsync; eff = "
                "roofline ms / ms, attn_eff the attention stage's; cublas runs the bench's fp32 reference attention, "
                "no tuned kernel: tools/plot_attention.py FILE.json --torch TORCH.json compares with PyTorch's best)\n",
                o.graph ? "CUDA graph replays" : "back-to-back launches");
    std::printf("%-6s %-7s %5s %5s %9s %9s %9s %9s %7s %5s %8s\n", "model", "phase", "M", "L", "cublas", "stream",
                "rowsync", "attention", "speedup", "eff", "attn_eff");
    auto find = [&](const std::string& m, int64_t M, int64_t L, const char* v) -> const Row* {
      for (const Row& r : rows)
        if (r.model == m && r.M == M && r.L == L && r.variant == v && r.ok) return &r;
      return nullptr;
    };
    auto ms = [](const Row* r) { return r ? r->ms : NAN; };
    for (const cusync_attn::BlockModel& model : models) {
      for (const char* phase : {"decode", "prefill"}) {
        std::vector<double> streamOverCublas, tileOverStream, tileOverBase, gemmsOverCublas;
        for (const Shape& sh : shapes) {
          if (std::string(sh.phase()) != phase) continue;
          const Row *cb = find(model.name, sh.M, sh.L, "cublas"), *st = find(model.name, sh.M, sh.L, "stream"),
                    *ts = find(model.name, sh.M, sh.L, "rowsync"), *at = find(model.name, sh.M, sh.L, "attention");
          std::printf("%-6s %-7s %5lld %5lld %9.4f %9.4f %9.4f %9.4f %7.3f %5.2f %8.2f%s\n", model.name, phase,
                      (long long)sh.M, (long long)sh.L, ms(cb), ms(st), ms(ts), ms(at), ts ? ts->speedup : NAN,
                      ts ? ts->eff : NAN, at ? at->eff : NAN,
                      ts && ts->speedup < 1 ? "  (loses to the baseline)" : "");
          if (cb && st) streamOverCublas.push_back(cb->ms / st->ms);
          if (st && ts) tileOverStream.push_back(st->ms / ts->ms);
          if (ts && std::isfinite(ts->speedup)) tileOverBase.push_back(ts->speedup);
          for (const ShapeInfo& t : infos)
            if (t.model == model.name && t.M == sh.M && t.L == sh.L) {
              const double ratio = (t.cublasQkvMs + t.cublasWoMs) / (t.oursQkvMs + t.oursWoMs);
              if (std::isfinite(ratio)) gemmsOverCublas.push_back(ratio);
            }
        }
        if (streamOverCublas.empty() && tileOverStream.empty() && tileOverBase.empty() && gemmsOverCublas.empty())
          continue;
        std::printf("%-6s %-7s geomean: stream over cublas %.3f (%zu shapes), rowsync over stream %.3f (%zu), "
                    "rowsync over the best baseline %.3f (%zu); our projections over cuBLAS's (qkv + wo alone) "
                    "%.3f (%zu)\n",
                    model.name, phase, geomean(streamOverCublas), streamOverCublas.size(), geomean(tileOverStream),
                    tileOverStream.size(), geomean(tileOverBase), tileOverBase.size(), geomean(gemmsOverCublas),
                    gemmsOverCublas.size());
      }
    }
  }

  std::string csvText = bench::csvRow({"model", "M", "L", "phase", "variant", "stage", "ms", "speedup",
                                       "speedup_vs_cublas", "speedup_vs_stream", "roofline_eff", "flops", "bytes",
                                       "rel_err_out", "rel_err_attention", "rel_err_cache", "ok"});
  for (const Row& r : rows)
    csvText += bench::csvRow({r.model, std::to_string(r.M), std::to_string(r.L), r.phase, r.variant,
                              r.block ? "block" : "attention", bench::num("%.5f", r.ms), bench::num("%.4f", r.speedup),
                              bench::num("%.4f", r.vsCublas), bench::num("%.4f", r.vsStream), bench::num("%.4f", r.eff),
                              bench::num("%.6g", r.flops), bench::num("%.6g", r.bytes), bench::num("%.3e", r.errOut),
                              bench::num("%.3e", r.errAttn), bench::num("%.3e", r.errCache), r.ok ? "1" : "0"});
  nlohmann::ordered_json doc = bench::runDocument(
      prop.name, peak, bw, o.iters, o.graph, "the faster of cublas and stream (block variants; none for the attention stage)");
  doc["attention_kernels"] = kHaveAttention;
  doc["results"] = nlohmann::ordered_json::array();
  for (const Row& r : rows)
    doc["results"].push_back({{"model", r.model},
                              {"M", r.M},
                              {"L", r.L},
                              {"phase", r.phase},
                              {"variant", r.variant},
                              {"stage", r.block ? "block" : "attention"},
                              {"ms", r.ms},
                              {"speedup", r.speedup},
                              {"speedup_vs_cublas", r.vsCublas},
                              {"speedup_vs_stream", r.vsStream},
                              {"roofline_eff", r.eff},
                              {"flops", r.flops},
                              {"bytes", r.bytes},
                              {"rel_err_out", r.errOut},
                              {"rel_err_attention", r.errAttn},
                              {"rel_err_cache", r.errCache},
                              {"ok", r.ok}});
  doc["shapes"] = nlohmann::ordered_json::array();
  for (const ShapeInfo& t : infos)
    doc["shapes"].push_back({{"model", t.model},
                             {"M", t.M},
                             {"L", t.L},
                             {"phase", t.phase},
                             {"plan", t.plan},
                             {"copies", t.copies},
                             {"roofline_ms", t.roofMs},
                             {"attention_roofline_ms", t.attnRoofMs},
                             {"ours_qkv_ms", t.oursQkvMs},
                             {"ours_wo_ms", t.oursWoMs},
                             {"cublas_qkv_ms", t.cublasQkvMs},
                             {"cublas_wo_ms", t.cublasWoMs}});
  const bool written = bench::writeCsvAndJson("cusync-bench attention", o.csv, csvText, o.json, doc.dump(2) + "\n");
  cudaStreamDestroy(s);
  if (!allOk) {
    std::fprintf(stderr, "cusync-bench attention: some variants FAILED their check against the reference\n");
    return 1;
  }
  return written ? 0 : 1;
}
