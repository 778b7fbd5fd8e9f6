// cusync-bench: side-by-side timings of cusync kernels and vendor libraries.
#include <cstdio>
#include <cstring>

#include "bench_gemm.h"
#include "bench_mlp.h"

static void usage(FILE* f) {
  std::fprintf(f,
               "usage: cusync-bench <command> [options]\n"
               "commands:\n"
               "  gemm   the Hopper GEMM against cuBLASLt on the DESIGN.md section 4 shapes\n"
               "         (bf16, B as [N, K]), M in {64, 256, 512, 1024, 2048, 4096}\n"
               "         options: --m LIST (comma separated), --iters N (default 50),\n"
               "                  --config auto|128x128|128x256, --csv FILE (default gemm_bench.csv)\n"
               "  mlp    GPT-3 / LLaMA MLP blocks: stream, pdl, rowsync, tilesync against cuBLAS\n"
               "         (cusync-bench mlp --help for its options)\n"
               "  help   this text\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "gemm")) return benchGemm(argc - 2, argv + 2);
  if (!std::strcmp(argv[1], "mlp")) return benchMlp(argc - 2, argv + 2);
  std::fprintf(stderr, "cusync-bench: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
