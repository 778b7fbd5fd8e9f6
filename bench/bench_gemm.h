// cusync-bench gemm: our Hopper GEMM against cuBLASLt (bench_gemm.cu). The
// command line is parsed in cusync_bench.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct GemmBenchOptions {
  std::vector<int64_t> ms = {64, 256, 512, 1024, 2048, 4096};
  std::vector<std::string> shapes;                // names from gemmBenchShapes(); empty: all of them
  std::vector<std::string> configs = {"auto"};    // names from gemmBenchConfigs()
  std::vector<int> splits = {0};                  // parts per split tile (split configurations); 0: the heuristic's
  std::vector<int> kCutGroups = {0};              // groups of KCut configurations; 0: the heuristic's
  int iters = 50;
  std::string csv = "gemm_bench.csv";
  bool trace = false;
  // The epilogue both sides run: identity, gelu (cuBLASLt's GELU epilogue)
  // or swiglu (N interleaved gate/up columns -> N / 2; cuBLAS: GEMM, then
  // cusync_mlp::swiglu, as in the MLP's cuBLAS pipeline).
  std::string epilogue = "identity";
};

// The names --shape and --config accept.
std::vector<std::string> gemmBenchShapes();
std::vector<std::string> gemmBenchConfigs();

// Exit status: 0 done, 1 a failure, 3 no Hopper GPU here.
int benchGemm(const GemmBenchOptions& o);
