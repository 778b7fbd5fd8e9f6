// cusync-bench: side-by-side timings of cusync kernels and vendor libraries.
// Every option is parsed and checked here; the commands get them as option
// structs (bench_gemm.h, bench_mlp.h, bench_conv.h, bench_attention.h).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "bench_attention.h"
#include "bench_conv.h"
#include "bench_gemm.h"
#include "bench_mlp.h"
#include "cusync_cli.h"
#include "kernels/attention/env.h"
#include "kernels/conv/conv.h"
#include "kernels/gemm/env.h"
#include "watchdog.h"

namespace {

using cusync_cli::addList;
using cusync_cli::oneOf;
using cusync_cli::wholeNumber;
using cusync_cli::writableFile;

// --hang-timeout, on every command.
void addHangTimeout(CLI::App* c) {
  c->add_option("--hang-timeout", bench::hangLimitSeconds(),
                "seconds the GPU may take to finish what one check or timing enqueued before the run counts as\n"
                "hung: the benchmark names it and exits with status 4 (1 to 86400)")
      ->transform(wholeNumber(1, 86400))
      ->type_name("S")
      ->capture_default_str();
}

const char* kExitStatus =
    "Exit status: 0 done; 1 a failure (a result failed its check against cuBLAS, cuDNN or the reference, an output\n"
    "file could not be written, a CUDA or cuDNN error); 2 bad usage; 3 no CUDA GPU here, or not a Hopper GPU (sm_90);\n"
    "4 a run on the GPU did not finish within --hang-timeout seconds (a hang: the message names the run).";

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string joinNumbers(const std::vector<int64_t>& values) {
  std::string s;
  for (int64_t v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

// The environment switches of a kernel family (kernels/*/env.h), one per
// line, for --help.
template <size_t N>
std::string envSwitchHelp(const cusync_gemm::EnvSwitch (&switches)[N]) {
  std::string s;
  for (const cusync_gemm::EnvSwitch& e : switches) s += std::string("  ") + e.name + e.effect + "\n";
  return s;
}

// Token counts and GEMM M values: 2^20 rows of 12288 bf16 values are 25 GB.
constexpr int64_t kMaxM = int64_t(1) << 20;

void addGemm(CLI::App& app, GemmBenchOptions& o) {
  CLI::App* c = app.add_subcommand(
      "gemm",
      "Our Hopper GEMM against cuBLASLt, side by side, on the GEMM shapes of the GPT-3 and LLaMA layers (bf16, B as\n"
      "[N, K]): median ms, TFLOP/s, time ratio to cuBLAS, max relative error; losses are flagged (MISS: cuBLAS\n"
      "time / ours under 0.95 at M >= 512, under 0.90 below). Needs a Hopper GPU.");
  addList(c, "--m", o.ms, "M values, comma separated (each 1 to 1048576)", wholeNumber(1, kMaxM));
  addList(c, "--shape", o.shapes, "only these shapes, comma separated (default: all of them): " + join(gemmBenchShapes()),
          oneOf(gemmBenchShapes(), "shape"));
  addList(c, "--config", o.configs,
          "tile configurations to time, a row each, comma separated: " + join(gemmBenchConfigs()),
          oneOf(gemmBenchConfigs(), "configuration"));
  c->add_option("--epilogue", o.epilogue,
                "the epilogue both sides run: identity, gelu (ours fused; cuBLASLt's GELU epilogue) or swiglu (N\n"
                "gate/up columns interleaved in blocks of 8 -> N / 2 outputs; ours fused; cuBLAS: the GEMM, then the\n"
                "MLP's SwiGLU kernel), as the MLP's first GEMMs run them")
      ->check(oneOf({"identity", "gelu", "swiglu"}, "epilogue"))
      ->type_name("E")
      ->capture_default_str();
  addList(c, "--splitk", o.splits,
          "parts per split tile for the splitk and tailsplit configurations, a row each, comma separated\n"
          "(0 to 4096; 0: the heuristic's)",
          wholeNumber(0, 4096));
  addList(c, "--kcut-groups", o.kCutGroups,
          "groups of blocks for the kcut configurations, a row each, comma separated (0 to 4096; 0: the\n"
          "heuristic's)",
          wholeNumber(0, 4096));
  c->add_option("--iters", o.iters, "timed launches per median (1 to 100000)")
      ->transform(wholeNumber(1, 100000))
      ->type_name("N")
      ->capture_default_str();
  c->add_option("--csv", o.csv, "results as CSV")->check(writableFile())->type_name("FILE")->capture_default_str();
  c->add_flag("--trace", o.trace,
              "after each row, one traced launch of ours: per-tile MMA time, epilogue and the gap before the\n"
              "next tile (medians), and the launch's start: block start to its first ticket and first MMA");
  addHangTimeout(c);
  c->footer("Environment switches of the GEMM, for A/B runs of one binary:\n" + envSwitchHelp(cusync_gemm::kEnvSwitches) + kExitStatus);
}

// --iters, --json, --csv and --hang-timeout of the pipeline benchmarks (mlp, conv, attention).
void addRunOptions(CLI::App* c, int& iters, std::string& json, std::string& csv) {
  c->add_option("--iters", iters, "timed runs per median (1 to 100000)")
      ->transform(wholeNumber(1, 100000))
      ->type_name("N")
      ->capture_default_str();
  c->add_option("--json", json, "results as JSON")->check(writableFile())->type_name("FILE")->capture_default_str();
  c->add_option("--csv", csv, "results as CSV")->check(writableFile())->type_name("FILE")->capture_default_str();
  addHangTimeout(c);
}

// --variant: names from `names`, comma separated, or all.
void addVariantList(CLI::App* c, std::vector<std::string>& variants, std::vector<std::string> names) {
  names.push_back("all");
  addList(c, "--variant", variants, "variants to run, comma separated, or all (default: all this binary has)",
          oneOf(names, "variant"))
      ->default_str("all");
}

void addMlp(CLI::App& app, MlpBenchOptions& o) {
  CLI::App* c = app.add_subcommand(
      "mlp",
      "GPT-3 175B and LLaMA 65B MLP blocks (tensor parallel 8, bf16) through cusync, against the best baseline:\n"
      "cuBLASLt (GPT-3: GEMM+GELU epilogue, GEMM; LLaMA: GEMM, SwiGLU kernel, GEMM) or our own two GEMMs in\n"
      "stream order without cusync (nosync), whichever is faster. Prints per M each variant's median ms, speedup\n"
      "over that baseline and roofline efficiency max(FLOPs / peak GEMM rate, bytes / bandwidth) / time, and what\n"
      "one traced run shows (GEMM1's tail, how much of it GEMM2 filled, GEMM2's wait per tile); then per M the\n"
      "winning cusync variant. Plot with tools/plot_mlp.py FILE.json. Needs a Hopper GPU.");
  addList(c, "--model", o.models, "gpt3, llama or both, comma separated", oneOf({"gpt3", "llama", "both"}, "model"));
  addList(c, "--tokens", o.tokens, "M values, comma separated (each 1 to 1048576)", wholeNumber(1, kMaxM));
  addList(c, "--variant", o.variants,
          "nosync, pdl, rowsync, tilesync, fused, cublas, comma separated, or all; a suffix :rowmajor or\n"
          ":grouped picks a synced variant's tile order, @serial launches it without PDL",
          CLI::Validator([](std::string& v) { return v == "all" ? std::string() : mlpVariantError(v); }, ""));
  addRunOptions(c, o.iters, o.json, o.csv);
  c->add_flag("--check", o.checkOnly, "check every variant against cuBLAS only, no timing");
  c->add_flag("--graph", o.graph,
              "time every variant as a replayed CUDA graph of one run (as inference servers run them) instead of\n"
              "back-to-back launches");
  c->add_option("--trace-dir", o.traceDir,
                 "write each variant's traced runs (back to back) tile by tile (both GEMMs: start, waits, MMA, end,\n"
                 "SMs; ns from the first run's first GEMM1 tile) to DIR/MODEL-mM-VARIANT.csv")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  c->add_option("--chain", o.chain,
                "also time each variant over K runs launched back to back between two events (launches, also with\n"
                "--graph), as consecutive decode steps run, where the timed runs each sit between two events; printed\n"
                "as 'back to back' us per run and summarized per M (0: off; 0 to 1000)")
      ->transform(wholeNumber(0, 1000))
      ->type_name("K")
      ->capture_default_str();
  c->footer(kExitStatus);
}

void addConv(CLI::App& app, ConvBenchOptions& o) {
  CLI::App* c = app.add_subcommand(
      "conv",
      "ResNet-38 and VGG-19 convolution layer pairs (bf16 NHWC, 3x3, bias + ReLU after each layer; the pairs of\n"
      "tools/torch_baselines.py: ResNet's 3x3 pairs at 56, 28, 14, 7 and stride-2 transitions, VGG-19's consecutive\n"
      "layers at a 224 input, its 3 RGB channels padded to 8) through cusync, against the best baseline: cuDNN (its\n"
      "fastest algorithm per layer) or our two convolutions in stream order without cusync (nosync), whichever is\n"
      "faster. Prints per pair and batch each variant's median ms, speedup over that baseline and roofline\n"
      "efficiency max(FLOPs / peak GEMM rate, bytes / bandwidth) / time (bytes: x, weights, biases and y, the\n"
      "intermediate left out); each layer alone, ours against cuDNN (target: cuDNN's time / ours >= 0.9); then per\n"
      "model a table. Every variant is checked first: cuDNN against a naive fp32 convolution, ours against cuDNN\n"
      "(against the naive one without cuDNN). Plot with tools/plot_conv.py FILE.json. Needs a Hopper GPU.");
  addList(c, "--model", o.models, "resnet, vgg or both, comma separated", oneOf({"resnet", "vgg", "both"}, "model"));
  addList(c, "--batch", o.batches, "batch sizes, comma separated (each 1 to 256)", wholeNumber(1, 256));
  std::string pairList;  // seven names a line
  const std::vector<std::string> pairNames = convBenchPairs();
  for (size_t i = 0; i < pairNames.size(); ++i) pairList += (i == 0 ? "" : i % 7 ? ", " : ",\n") + pairNames[i];
  addList(c, "--pair", o.pairs, "only these layer pairs, of any model, comma separated:\n" + pairList,
          oneOf(pairNames, "pair"));
  addVariantList(c, o.variants, convBenchVariants());
  addRunOptions(c, o.iters, o.json, o.csv);
  c->add_flag("--check", o.checkOnly, "check every variant only, no timing");
  c->add_flag("--graph", o.graph,
              "time every variant and layer as replayed CUDA graphs (one per operand copy, each holding one run)\n"
              "instead of back-to-back launches");
  c->add_option("--trace-dir", o.traceDir,
                "after timing, run our pair variants (nosync, pdl, tilesync, fused) 4 times back to back, traced,\n"
                "and write them tile by tile (both layers: start, waits, MMA, end, SMs; ns from the first run's first\n"
                "layer-1 tile) to DIR/MODEL-PAIR-bBATCH-VARIANT.csv")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  c->footer("Variants:\n" + convBenchVariantHelp() +
            "Environment switches of the convolution, for A/B runs of one binary:\n" +
            envSwitchHelp(cusync_conv::kEnvSwitches) + kExitStatus);
}

void addAttention(CLI::App& app, AttentionBenchOptions& o) {
  CLI::App* c = app.add_subcommand(
      "attention",
      "GPT-3 175B and LLaMA 65B attention blocks (tensor parallel 8, bf16, head dimension 128: QKV projection\n"
      "appending to the KV cache, causal attention over it, output projection) through cusync, at the shapes of\n"
      "tools/torch_baselines.py: decode, M new tokens after L cached ones, and prefill, L = 0. Every variant is\n"
      "checked against the cuBLAS block with an fp32 attention, then timed. Prints per shape each variant's median\n"
      "ms, speedup over the best baseline (the faster of cublas and stream; none for the attention stage alone)\n"
      "and roofline efficiency max(FLOPs / peak GEMM rate, bytes / bandwidth) / time; then per model a table and\n"
      "geomeans over the decode and the prefill shapes. tools/plot_attention.py FILE.json [--torch TORCH.json]\n"
      "merges PyTorch's block and SDPA times and plots. Needs a Hopper GPU.");
  addList(c, "--model", o.models, "gpt3, llama or both, comma separated", oneOf({"gpt3", "llama", "both"}, "model"));
  c->add_option("--shapes", o.shapes,
                "shape sets: decode (M in " + joinNumbers(kDecodeMs) + " x L in " + joinNumbers(kDecodeLs) +
                    "), prefill (M in " + joinNumbers(kPrefillMs) + ", L = 0) or all")
      ->check(oneOf({"decode", "prefill", "all"}, "shape set"))
      ->type_name("SET")
      ->capture_default_str();
  addList(c, "--m", o.ms, "new tokens M, comma separated (each 1 to 65536): the selected sets' M values",
          wholeNumber(1, 65536));
  addList(c, "--l", o.ls, "cached tokens L, comma separated (each 0 to 262144): the selected sets' L values",
          wholeNumber(0, 262144));
  addVariantList(c, o.variants, attentionBenchVariants());
  addRunOptions(c, o.iters, o.json, o.csv);
  c->add_flag("--check,--check-only", o.checkOnly, "check every variant only, no timing");
  c->add_flag("--graph", o.graph,
              "time every variant as replayed CUDA graphs (one per operand copy, each holding one step) instead of\n"
              "back-to-back launches");
  c->footer("Variants:\n" + attentionBenchVariantHelp() +
            "Environment switches of the attention, for A/B runs of one binary (each shape's plan names its splits):\n" +
            envSwitchHelp(cusync_attn::kEnvSwitches) + kExitStatus);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("cusync-bench: benchmarks of the cusync kernels against cuBLAS and cuDNN, on a Hopper GPU.",
               "cusync-bench");
  // --help shows every command's options; "cusync-bench gemm --help" only gemm's.
  app.set_help_flag();
  app.set_help_all_flag("-h,--help", "print this help and exit");
  app.require_subcommand(1, 1);
  app.footer(kExitStatus);
  GemmBenchOptions gemm;
  MlpBenchOptions mlp;
  ConvBenchOptions conv;
  AttentionBenchOptions attention;
  addGemm(app, gemm);
  addMlp(app, mlp);
  addConv(app, conv);
  addAttention(app, attention);
  if (const int status = cusync_cli::parse(app, argc, argv); status >= 0) return status;
  if (app.got_subcommand("gemm")) return benchGemm(gemm);
  if (app.got_subcommand("conv")) {
    // "all" among the variants stands for every one this binary has (an empty list).
    std::vector<std::string> variants;
    for (const std::string& v : conv.variants)
      if (v != "all") variants.push_back(v);
    if (variants.size() < conv.variants.size()) variants.clear();
    conv.variants = variants;
    return benchConv(conv);
  }
  if (app.got_subcommand("attention")) {
    // "all" among the variants stands for every one this binary has (an empty list).
    if (std::find(attention.variants.begin(), attention.variants.end(), "all") != attention.variants.end())
      attention.variants.clear();
    return benchAttention(attention);
  }
  // "all" among the variants stands for the default list, once.
  std::vector<std::string> variants;
  for (const std::string& v : mlp.variants)
    if (v != "all") variants.push_back(v);
  mlp.variants = variants.empty() ? MlpBenchOptions{}.variants : variants;
  return benchMlp(mlp);
}
