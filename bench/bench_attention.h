// cusync-bench attention: the GPT-3 / LLaMA attention block (kernels/attention)
// through cusync, against our kernels in stream order and the cuBLAS block
// (bench_attention.cu). The command line is parsed in cusync_bench.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct AttentionBenchOptions {
  std::vector<std::string> models = {"gpt3", "llama"};
  std::string shapes = "all";         // decode, prefill or all
  std::vector<int64_t> ms, ls;        // where given, the M and L values of the selected shape sets
  std::vector<std::string> variants;  // names from attentionBenchVariants(); empty: every one this binary has
  int iters = 30;
  std::string json = "attention_bench.json", csv = "attention_bench.csv";
  bool checkOnly = false;
  bool graph = false;  // time every variant as replayed CUDA graphs
};

// The shape sets' M and L values (--shapes): decode, M new tokens after L
// cached ones; prefill, M tokens after none.
inline const std::vector<int64_t> kDecodeMs = {1, 8, 32, 64, 128, 256};
inline const std::vector<int64_t> kDecodeLs = {1024, 4096};
inline const std::vector<int64_t> kPrefillMs = {512, 1024, 2048, 4096};

// The variants' names (--variant), the ones this binary lacks included.
std::vector<std::string> attentionBenchVariants();
// One line per variant for --help: "name: what it runs".
std::string attentionBenchVariantHelp();

// Exit status: 0 done, 1 a failure (a variant failed its check, a CUDA
// error, an output file could not be written), 3 no Hopper GPU here.
int benchAttention(const AttentionBenchOptions& o);
