// The traced runs' CSV (bench/trace_csv.h): times relative to the first
// run's first stage-1 tile, untraced records left out, pair SMs shifted back.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace_csv.h"

namespace {

cusync_gemm::TileTrace record(unsigned long long start, unsigned long long end, unsigned sm, unsigned peerSm = 0) {
  cusync_gemm::TileTrace t{};
  t.start = start, t.end = end, t.sm = sm, t.peerSm = peerSm;
  t.mmaStart = start + 10, t.mmaNs = 5, t.waitNs = 3;
  return t;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(f, l);) v.push_back(l);
  return v;
}

TEST(TraceCsv, TimesAreRelativeToTheFirstRunsFirstStageOneTile) {
  // Run 0: stage 1 has tiles at 1000 and 900 and one untraced record; stage 2 one tile.
  bench::RunTrace run0{{record(1000, 1500, 4), cusync_gemm::TileTrace{}, record(900, 1400, 7, 8)},
                       {record(1600, 2000, 2)}};
  bench::RunTrace run1{{record(2100, 2600, 4)}, {}};
  const std::string path = ::testing::TempDir() + "trace_csv_test.csv";
  bench::writeTraceCsv(path, {run0, run1}, "layer");
  const std::vector<std::string> l = lines(path);
  ASSERT_EQ(l.size(), 5u);  // header, 3 tiles of run 0, 1 of run 1
  EXPECT_EQ(l[0], "run,layer,index,start,wait_ns,mma_start,mma_ns,end,sm,sm2,setup_ns,block_entry,block_exit,ready");
  EXPECT_EQ(l[1], "0,1,0,100,3,110,5,600,4,-1,0,,,");
  EXPECT_EQ(l[2], "0,1,2,0,3,10,5,500,7,7,0,,,");  // the untraced record 1 is left out; sm2 = peerSm - 1
  EXPECT_EQ(l[3], "0,2,0,700,3,710,5,1100,2,-1,0,,,");
  EXPECT_EQ(l[4], "1,1,0,1200,3,1210,5,1700,4,-1,0,,,");
  std::remove(path.c_str());
}

// The waiter's time keeps its low 32 bits; readyAt() takes the high ones
// from the loader's start, also where the two straddle a 2^32 ns boundary.
TEST(TraceCsv, ReadyTimesAreRebuiltFromTheStart) {
  cusync_gemm::TileTrace t{};
  EXPECT_EQ(cusync_gemm::readyAt(t), 0u);  // unset
  t.start = 0x500000010ull;
  t.readyLow32 = 0x00000031u;
  EXPECT_EQ(cusync_gemm::readyAt(t), 0x500000031ull);
  t.readyLow32 = 0xfffffff1u;  // 31 ns before the boundary the start has just crossed
  EXPECT_EQ(cusync_gemm::readyAt(t), 0x4fffffff1ull);
  t.start = 0x4fffffff0ull;
  t.readyLow32 = 0x00000011u;  // the ready time crossed it after the start
  EXPECT_EQ(cusync_gemm::readyAt(t), 0x500000011ull);
  // In the CSV, relative to the first run's first stage-1 tile like the other times.
  cusync_gemm::TileTrace a = record(1000, 1500, 4), b = record(1600, 2000, 2);
  b.readyLow32 = 1801;
  const std::string path = ::testing::TempDir() + "trace_csv_ready.csv";
  bench::writeTraceCsv(path, {bench::RunTrace{{a}, {b}}}, "gemm");
  const std::vector<std::string> l = lines(path);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[2], "0,2,0,600,3,610,5,1000,2,-1,0,,,801");
  std::remove(path.c_str());
}

TEST(TraceCsv, AnUnwritablePathThrows) {
  bench::RunTrace run{{record(1, 2, 0)}, {}};
  EXPECT_THROW(bench::writeTraceCsv("/nonexistent-dir/x.csv", {run}, "gemm"), std::runtime_error);
}

}  // namespace
