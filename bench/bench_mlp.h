// cusync-bench mlp: GPT-3 / LLaMA MLP variants against cuBLAS (bench_mlp.cu).
// The command line is parsed in cusync_bench.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct MlpBenchOptions {
  std::vector<std::string> models = {"gpt3", "llama"};
  std::vector<int64_t> tokens = {64, 256, 512, 1024, 1536, 2048, 3072, 4096};
  std::vector<std::string> variants = {"nosync",   "pdl",          "rowsync", "rowsync:rowmajor", "tilesync",
                                       "tilesync:rowmajor", "fused", "cublas"};
  int iters = 30;
  std::string json = "mlp_bench.json", csv = "mlp_bench.csv";
  bool checkOnly = false;
  bool graph = false;  // time every variant as a replayed CUDA graph
  std::string traceDir;  // non-empty: each variant's traced run, tile by tile, as DIR/MODEL-mM-VARIANT.csv
  int chain = 0;  // > 0: also each variant's time per run over this many runs launched back to back
};

// Empty when `variant` (e.g. "rowsync:rowmajor@serial") names a variant, else why not.
std::string mlpVariantError(const std::string& variant);

// Exit status: 0 done, 1 a failure (a variant failed its check, an output
// file could not be written), 3 no Hopper GPU here.
int benchMlp(const MlpBenchOptions& o);
