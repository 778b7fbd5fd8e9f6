// Transformer MLP blocks through cusync: GPT-3 (GEMM1 with fused GELU, then
// GEMM2) and LLaMA (GEMM1 over gate and up interleaved, fused SwiGLU, then
// GEMM2), bf16, tensor parallel 8 as in the cuSync paper (docs/design.md, "Workloads"):
//
//   GPT-3 175B:  H = gelu(X[M,12288] W1^T)  W1 [6144, 12288]    H [M, 6144]
//                Y = H W2^T                 W2 [12288, 6144]    Y [M, 12288]
//   LLaMA 65B:   H = swiglu(X[M,8192] W1^T) W1 [5504, 8192]     H [M, 2752]
//                Y = H W2^T                 W2 [8192, 2752]     Y [M, 8192]
//
// Weights are PyTorch Linear weights ([out, in], row-major). LLaMA's W1 holds
// gate and up rows interleaved in blocks of 8 (cusync_gemm::swigluInterleavedRow):
// row 16q + r is gate row 8q + r for r < 8, up row 8q + r - 8 for r >= 8.
//
// Variants (one API, all capturable in a CUDA graph once prepared):
//   NoSync    our two GEMMs (cusync_gemm::gemm) one after the other in stream
//             order, no tile synchronization: our own baseline
//   Pdl       programmatic dependent launch only: GEMM2 is launched early with
//             PDL, prefetches its weights, then waits for ALL of GEMM1
//             (cusync policy WholeSync: one semaphore, waits for every tile)
//   RowSync   cusync RowSync, PDL launch mode: a GEMM2 tile waits for the
//             GEMM1 row of tiles it reads
//   TileSync  cusync TileSync (NoAtomicAdd), PDL launch mode: a GEMM2 k-block
//             waits only for the GEMM1 tile it reads
//   Fused     one persistent kernel runs both GEMMs (cusync/fused.h): its
//             blocks take GEMM1's tiles, then GEMM2's, from one counter, a
//             GEMM2 tile waiting for its GEMM1 row band (RowSync) and
//             streaming its weights into L2 while it waits
//   Cublas    what PyTorch does: cuBLASLt GEMM with GELU epilogue, then GEMM
//             (GPT-3); cuBLASLt GEMM, a SwiGLU kernel, cuBLASLt GEMM (LLaMA)
// StridedTileSync does not apply: GEMM1's epilogue fuses SwiGLU, so each
// producer tile already holds matching gate and up columns.
//
// Requirements: a Hopper GPU (sm_90a binary), M >= 1, 16-byte aligned pointers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

namespace cusync_gemm {
struct TileTrace;
}

namespace cusync_mlp {

enum class Model { GPT3, LLaMA };
enum class Variant { NoSync, Pdl, RowSync, TileSync, Fused, Cublas };
// Tile order of the two GEMM stages of the synced variants. Auto: row-major
// for RowSync, the GEMM's grouped order (bands of 8 row tiles) otherwise.
enum class Order { Auto, RowMajor, Grouped };

// GEMM1 [M, K1] x [K1, N1] -> activation -> H [M, K2]; GEMM2 [M, K2] x [K2, N2].
struct Dims {
  int64_t K1, N1, K2, N2;
};
inline Dims dims(Model m) {
  if (m == Model::GPT3) return {12288, 6144, 6144, 12288};
  return {8192, 5504, 2752, 8192};
}

// The SwiGLU of the cuBLAS pipeline, as a kernel of its own: out [M, N1 / 2]
// = silu(gate) * up from gateUp [M, N1] in the interleaved layout above
// (columns 16q .. 16q + 7 gate, 16q + 8 .. 16q + 15 up), bf16, asynchronous
// on `stream`. N1 a multiple of 16, both pointers 16-byte aligned; throws
// cusync::Error otherwise.
void swiglu(const void* gateUp, void* out, int64_t M, int64_t N1, cudaStream_t stream);

inline const char* toString(Model m) { return m == Model::GPT3 ? "gpt3" : "llama"; }
inline const char* toString(Variant v) {
  switch (v) {
    case Variant::NoSync: return "nosync";
    case Variant::Pdl: return "pdl";
    case Variant::RowSync: return "rowsync";
    case Variant::TileSync: return "tilesync";
    case Variant::Fused: return "fused";
    case Variant::Cublas: return "cublas";
  }
  return "?";
}
inline const char* toString(Order o) {
  switch (o) {
    case Order::Auto: return "auto";
    case Order::RowMajor: return "rowmajor";
    case Order::Grouped: return "grouped";
  }
  return "?";
}
Model parseModel(const std::string& s);      // "gpt3" | "llama"
Variant parseVariant(const std::string& s);  // "nosync" | "pdl" | "rowsync" | "tilesync" | "fused" | "cublas"

struct Buffers {
  const void* X = nullptr;   // [M, K1] bf16
  const void* W1 = nullptr;  // [N1, K1] bf16
  void* H = nullptr;         // [M, K2] bf16 (intermediate, written by every variant)
  const void* W2 = nullptr;  // [N2, K2] bf16
  void* Y = nullptr;         // [M, N2] bf16
  // Optional, for analysis: per-tile timelines of GEMM1 and GEMM2 (our
  // kernels only; cuBLAS records nothing), indexed by the tile's position in
  // its stage order. Size each for (ceil(M / 64) x ceil(N / 128)) records.
  cusync_gemm::TileTrace* trace1 = nullptr;
  cusync_gemm::TileTrace* trace2 = nullptr;
};

// One MLP block for one model. Keeps the cusync stages (one pair per M,
// variant and order; their semaphores count runs, so they live as long as
// this object), the cuBLASLt handle, plans and workspace, and LLaMA's
// cuBLAS scratch [maxM, N1]. Not thread-safe; one object per stream.
class Mlp {
 public:
  Mlp(Model model, int64_t maxM);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  Model model() const;
  int64_t maxM() const;

  // Allocates what a (M, variant, order) run needs: call before capturing
  // run() in a CUDA graph (run() does it itself outside a capture, and
  // throws cusync::Error when it would have to allocate during one).
  void prepare(int64_t M, Variant v, Order o = Order::Auto);

  // Enqueues one MLP on `stream`. Throws cusync::Error on bad arguments.
  // pdl = false launches a synced variant's stages without the PDL attribute
  // (LaunchMode::Serial: GEMM2 starts after GEMM1 ends, its waits succeed at
  // once), to measure what the early launch itself gains or costs.
  void run(int64_t M, const Buffers& b, Variant v, cudaStream_t stream, Order o = Order::Auto, bool pdl = true);

  // The two GEMMs alone (our kernel, no synchronization), for analysis.
  void gemm1(int64_t M, const Buffers& b, cudaStream_t stream);
  void gemm2(int64_t M, const Buffers& b, cudaStream_t stream);
  // cuBLAS GEMM1 (with GELU epilogue for GPT-3; for LLaMA including the
  // SwiGLU kernel) and GEMM2 alone.
  void cublasGemm1(int64_t M, const Buffers& b, cudaStream_t stream);
  void cublasGemm2(int64_t M, const Buffers& b, cudaStream_t stream);

  // The tile configurations ("128x256/128x192-tailsplit") GEMM1 and GEMM2 of
  // variant v use at this M.
  std::string configs(int64_t M, Variant v) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cusync_mlp
