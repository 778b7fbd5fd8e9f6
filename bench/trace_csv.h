// Traced runs of a two-stage pipeline, tile by tile, as CSV (cusync-bench
// mlp and conv --trace-dir): one row per traced tile of each stage, times in
// ns from the first run's first stage-1 tile; sm2 is a cluster pair's second
// SM (-1: none); ready: the block's waiter had resolved the tile's cusync
// waits (empty for a stage that waits on nothing). `stageColumn` names the
// stage column ("gemm" for the MLP, "layer" for the convolution pairs).
#pragma once

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm/gemm.h"

namespace bench {

using RunTrace = std::pair<std::vector<cusync_gemm::TileTrace>, std::vector<cusync_gemm::TileTrace>>;

inline void writeTraceCsv(const std::string& path, const std::vector<RunTrace>& runs, const std::string& stageColumn) {
  unsigned long long t0 = ~0ull;
  for (const auto& r : runs.front().first)
    if (r.start != 0) t0 = std::min(t0, r.start);
  auto rel = [&](unsigned long long t) { return t == 0 ? std::string() : std::to_string((long long)(t - t0)); };
  std::string text =
      "run," + stageColumn + ",index,start,wait_ns,mma_start,mma_ns,end,sm,sm2,setup_ns,block_entry,block_exit,ready\n";
  for (size_t run = 0; run < runs.size(); ++run) {
    for (int g = 0; g < 2; ++g) {
      const auto& t = g == 0 ? runs[run].first : runs[run].second;
      for (size_t i = 0; i < t.size(); ++i) {
        const auto& r = t[i];
        if (r.start == 0 && r.end == 0) continue;
        text += std::to_string(run) + "," + std::to_string(g + 1) + "," + std::to_string(i) + "," + rel(r.start) +
                "," + std::to_string(r.waitNs) + "," + rel(r.mmaStart) + "," + std::to_string(r.mmaNs) + "," +
                rel(r.end) + "," + std::to_string(r.sm) + "," + std::to_string(int(r.peerSm) - 1) + "," +
                std::to_string(r.setupNs) + "," + rel(r.blockEntry) + "," + rel(r.blockExit) + "," +
                rel(cusync_gemm::readyAt(r)) + "\n";
      }
    }
  }
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("cannot write '" + path + "'");
}

}  // namespace bench
