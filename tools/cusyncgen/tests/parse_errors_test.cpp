// Malformed specs: each gives one clear error at the right line and column.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "error.h"
#include "model.h"

namespace {

// A valid two-stage spec; the cases below change one line of it.
const char* kBase = R"(param M = 256
stage p grid(4, 2) tile(64, 128, 32)
  output H[M, 256]
  writes H[i*128 : (i+1)*128, j*64 : (j+1)*64]
stage c grid(2, 2) tile(64, 128, 32)
  output O[M, 128]
  writes O[i*128 : (i+1)*128, j*64 : (j+1)*64]
  walk k < 8
  reads H[i*128 : (i+1)*128, k*32 : (k+1)*32]
  sync H tile
)";

// kBase with line `line` (1-based) replaced by `text`.
std::string withLine(int line, const std::string& text) {
  std::string s = kBase, out;
  size_t pos = 0;
  for (int l = 1; pos < s.size(); ++l) {
    const size_t end = s.find('\n', pos);
    out += (l == line ? text : s.substr(pos, end - pos)) + "\n";
    pos = end + 1;
  }
  return out;
}

struct Case {
  const char* name;
  int line;
  std::string text;
  int errLine, errCol;
  const char* message;
};

const Case kCases[] = {
    {"unknown_name", 9, "  reads H[i*BM : (i+1)*128, k*32 : (k+1)*32]", 9, 13, "unknown name 'BM'"},
    {"unknown_tensor", 9, "  reads Q[i*128 : (i+1)*128, k*32 : (k+1)*32]", 9, 9, "unknown tensor 'Q'"},
    {"non_affine_product", 9, "  reads H[i*k : i*k + 128, k*32 : (k+1)*32]", 9, 12, "non-affine expression: product"},
    {"non_affine_division", 9, "  reads H[i/2 : i/2 + 128, k*32 : (k+1)*32]", 9, 12, "non-affine expression: division"},
    {"range_length_varies", 9, "  reads H[i*128 : (i+1)*128 + i, k*32 : (k+1)*32]", 9, 11, "length of the rows range"},
    {"out_of_bounds", 9, "  reads H[i*128 : (i+1)*128, k*32 + 64 : (k+1)*32 + 64]", 9, 30, "out of bounds: columns"},
    {"negative_rows", 9, "  reads H[i*128 - 1 : (i+1)*128 - 1, k*32 : (k+1)*32]", 9, 11, "out of bounds: rows"},
    {"no_producer_writes", 2, "stage p grid(2, 2) tile(64, 128, 32)", 9, 30, "read that no producer writes"},
    {"grid_overshoots", 2, "stage p grid(5, 2) tile(64, 128, 32)", 2, 9, "shape mismatch"},
    {"write_length", 4, "  writes H[i*128 : (i+1)*128, j*32 : (j+1)*32]", 4, 31, "shape mismatch: the tile writes 32"},
    {"write_not_own_block", 4, "  writes H[i*128 : (i+1)*128, j*64 + 64 : (j+1)*64 + 64]", 4, 31,
     "write map must be the tile's own block"},
    {"k_step_mismatch", 9, "  reads H[i*128 : (i+1)*128, k*16 : (k+1)*16]", 9, 30, "shape mismatch: a k-block reads 16"},
    {"rows_move_with_walk", 9, "  reads H[k : k + 128, k*32 : (k+1)*32]", 9, 11, "innermost walk variable"},
    {"rows_use_j", 9, "  reads H[j*128 : (j+1)*128, k*32 : (k+1)*32]", 9, 11, "rows may not depend on j"},
    {"no_walk", 8, "", 9, 30, "unknown name 'k'"},
    {"unknown_granularity", 10, "  sync H rowz", 10, 10, "unknown granularity 'rowz'"},
    {"strided_single_read", 10, "  sync H strided", 10, 8, "'strided' needs several reads"},
    {"sync_unread_tensor", 10, "  sync O tile", 10, 8, "reads no producer output named 'O'"},
    {"reads_own_output", 9, "  reads O[i*128 : (i+1)*128, k*32 : (k+1)*32]", 9, 9, "reads its own output"},
    {"bad_character", 10, "  sync H tile $", 10, 15, "unexpected character '$'"},
    {"trailing_tokens", 10, "  sync H tile tile", 10, 15, "unexpected 'tile'"},
    {"unknown_statement", 10, "  wait H", 10, 3, "unknown statement 'wait'"},
    {"redefined", 1, "param H = 3", 3, 10, "'H' is already defined"},
    {"zero_grid", 2, "stage p grid(0, 2) tile(64, 128, 32)", 2, 14, "grid must be positive"},
    // Overflow is an error at the operator that overflows, not a wrapped value.
    {"overflow_product", 1, "param M = 1099511627776*1099511627776 + 256", 1, 24,
     "arithmetic overflow: 1099511627776 * 1099511627776 does not fit in 64 bits"},
    {"overflow_sum", 1, "param M = 1099511627776*8388607 + 1099511627776*8388607", 1, 33, "arithmetic overflow"},
    {"overflow_difference", 1, "param M = -1099511627776*8388607 - 1099511627776*8388607", 1, 34, "arithmetic overflow"},
    {"number_too_large", 1, "param M = 1099511627777", 1, 11, "number too large"},
    // Nesting is limited (the parser recurses per level): an error, not a stack overflow.
    {"deep_parentheses", 1, "param M = " + std::string(300, '(') + "1" + std::string(300, ')'), 1, 267,
     "expression nested too deeply"},
    {"long_unary_minus", 1, "param M = " + std::string(300, '-') + "1", 1, 267, "expression nested too deeply"},
    {"too_many_tiles", 2, "stage p grid(4096, 8192) tile(64, 128, 32)", 2, 9, "more than 16777216 tiles"},
    {"tile_too_large", 2, "stage p grid(4, 2) tile(64, 4294967296, 32)", 2, 20, "does not fit the core's 32-bit"},
    {"control_character", 10, "  sync H tile \x01", 10, 15, "unexpected character '\\x01'"},
};

// gtest prints a failing case's parameter by its name.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ParseErrors : public ::testing::TestWithParam<Case> {};

TEST_P(ParseErrors, PointsAtTheProblem) {
  const Case& c = GetParam();
  try {
    cusyncgen::compile(withLine(c.line, c.text), "t.cusync");
    FAIL() << "no error for " << c.name;
  } catch (const cusyncgen::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.format("t.cusync");
    EXPECT_EQ(e.loc().line, c.errLine) << e.format("t.cusync");
    EXPECT_EQ(e.loc().col, c.errCol) << e.format("t.cusync");
    EXPECT_EQ(e.format("t.cusync").rfind("t.cusync:" + std::to_string(c.errLine) + ":", 0), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, ParseErrors, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseErrors, BaseSpecIsValid) {
  const cusyncgen::Model m = cusyncgen::compile(kBase);
  ASSERT_EQ(m.edges.size(), 1u);
  EXPECT_EQ(m.edges[0].rules.grain, cusyncgen_rt::kTile);
  EXPECT_EQ(m.edges[0].rules.steps, 8u);
}

TEST(ParseErrors, ConflictingGranularities) {
  std::string s = kBase;
  s += R"(stage d grid(2, 2) tile(64, 128, 32)
  output D[M, 128]
  writes D[i*128 : (i+1)*128, j*64 : (j+1)*64]
  walk k < 8
  reads H[i*128 : (i+1)*128, k*32 : (k+1)*32]
  sync H row
)";
  try {
    cusyncgen::compile(s);
    FAIL() << "no error";
  } catch (const cusyncgen::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("posts one way to all its consumers"), std::string::npos) << e.what();
    EXPECT_EQ(e.loc().line, 16);
  }
}

TEST(ParseErrors, SetOverridesParamsAndRejectsUnknownOnes) {
  const cusyncgen::Model m = cusyncgen::compile(kBase, "t", {{"M", 200}});
  EXPECT_EQ(m.spec.params.at("M"), 200);
  EXPECT_THROW(cusyncgen::compile(kBase, "t", {{"Q", 1}}), cusyncgen::SpecError);
}

}  // namespace
