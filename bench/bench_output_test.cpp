// CSV fields of the benchmarks' output files: quoted exactly where needed.
#include <gtest/gtest.h>

#include "bench_output.h"

namespace {

TEST(Csv, PlainFieldsStayAsTheyAre) {
  EXPECT_EQ(bench::csvField("a66 256x128 c2x1x1 k1"), "a66 256x128 c2x1x1 k1");
  EXPECT_EQ(bench::csvField(""), "");
}

TEST(Csv, CommasQuotesAndLineBreaksAreQuoted) {
  EXPECT_EQ(bench::csvField("rowsync,grouped"), "\"rowsync,grouped\"");
  EXPECT_EQ(bench::csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(bench::csvField("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, RowsJoinFieldsAndEndTheLine) {
  EXPECT_EQ(bench::csvRow({"gpt3", "64", "a,b", ""}), "gpt3,64,\"a,b\",\n");
  EXPECT_EQ(bench::num("%.3f", 1.23456), "1.235");
}

}  // namespace
