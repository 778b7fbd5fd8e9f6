// Names in generated headers: the namespace comes from --namespace (checked)
// or from the spec's file name (made usable), so a header always compiles.
#include <gtest/gtest.h>

#include "class.h"  // generated from a copy of specs/gpt3_mlp.cusync named class.cusync
#include "emit.h"

namespace {

TEST(Names, FileNamesBecomeUsableNamespaces) {
  EXPECT_EQ(cusyncgen::namespaceFor("specs/gpt3-mlp.cusync"), "gpt3_mlp");
  EXPECT_EQ(cusyncgen::namespaceFor("dir/class.cusync"), "class_");
  EXPECT_EQ(cusyncgen::namespaceFor("std.cusync"), "std_");
  EXPECT_EQ(cusyncgen::namespaceFor("3x.cusync"), "spec_3x");
  EXPECT_EQ(cusyncgen::namespaceFor(".cusync"), "spec_");
  EXPECT_EQ(cusyncgen::namespaceFor("a b;c.cusync"), "a_b_c");
  for (const char* f : {"dir/class.cusync", "std.cusync", "3x.cusync", ".cusync", "a b;c.cusync", "x/y/z"})
    EXPECT_EQ(cusyncgen::namespaceError(cusyncgen::namespaceFor(f)), "") << f;
}

TEST(Names, NamespaceOptionIsChecked) {
  EXPECT_EQ(cusyncgen::namespaceError("gpt3_mlp"), "");
  EXPECT_EQ(cusyncgen::namespaceError("my::policies"), "");
  for (const char* bad : {"1 bad;", "", "a b", "a::", "::a", "a:::b", "class", "my::int", "std", "a-b", "x\ny"})
    EXPECT_NE(cusyncgen::namespaceError(bad), "") << bad;
}

// The generated header compiled (above); its namespace is class_.
TEST(Names, KeywordFileNameHeaderCompiles) {
  static_assert(class_::gemm2_shape.grid.x == 12288 / 128, "the header holds the spec's shapes");
  EXPECT_STREQ(class_::gemm2_in::kName, "gemm2_in");
}

}  // namespace
