#pragma once
// cusync-bench mlp: GPT-3 / LLaMA MLP variants against cuBLAS (bench_mlp.cu).
int benchMlp(int argc, char** argv);
