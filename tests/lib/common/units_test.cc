#include "lib/common/units.h"
#include "lib/common/utf8.h"

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(ParseSize, AcceptsDecimalAndBinaryPrefixes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("4KiB"), 4096u);
  EXPECT_EQ(*ParseSize("1MiB"), 1048576u);
  EXPECT_EQ(*ParseSize("1GB"), 1000000000u);
  EXPECT_EQ(*ParseSize("2k"), 2000u);
  EXPECT_EQ(*ParseSize("1.5GiB"), 1610612736u);
  EXPECT_EQ(*ParseSize(" 8 MiB "), 8388608u);
}

TEST(ParseSize, RejectsGarbageWithReadableMessage) {
  auto r = ParseSize("12XB");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "'12XB': unknown size unit 'XB' (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("abc").ok());
  EXPECT_FALSE(ParseSize("inf").ok());
  EXPECT_FALSE(ParseSize("-1MiB").ok());
}

TEST(ParseDuration, Units) {
  EXPECT_DOUBLE_EQ(*ParseDuration("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseDuration("30s"), 30);
  EXPECT_DOUBLE_EQ(*ParseDuration("2m"), 120);
  EXPECT_DOUBLE_EQ(*ParseDuration("1h"), 3600);
  EXPECT_DOUBLE_EQ(*ParseDuration("1.5"), 1.5);
  EXPECT_NEAR(*ParseDuration("250us"), 250e-6, 1e-12);
  EXPECT_FALSE(ParseDuration("3 days").ok());
}

TEST(ParseRate, BytesAndOps) {
  auto r = ParseRate("2GiB/s");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->value, 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(r->unit, RateUnit::kBytesPerSecond);
  r = ParseRate("50kIOPS");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->value, 50000);
  EXPECT_EQ(r->unit, RateUnit::kOpsPerSecond);
  r = ParseRate("500MB/s");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->value, 500e6);
  EXPECT_FALSE(ParseRate("5GiB").ok());
  EXPECT_FALSE(ParseRate("fast").ok());
}

TEST(Format, Human) {
  EXPECT_EQ(FormatSize(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytesPerSecond(2.0 * 1024 * 1024 * 1024), "2.00 GiB/s");
  EXPECT_EQ(FormatRate(50000, "IOPS"), "50.00 k IOPS");
  EXPECT_EQ(FormatRate(0.41, "core-s/s"), "0.41 core-s/s") << "one space, not two";
  EXPECT_EQ(FormatRate(512, "IOPS"), "512.00 IOPS");
  EXPECT_EQ(FormatDuration(0.25), "250.0 ms");
  EXPECT_EQ(FormatDuration(0.001 - 1e-12), "1.0 ms");  // not "1000.0 us"
  EXPECT_EQ(FormatDuration(1 - 1e-9), "1.00 s");       // not "1000.0 ms"
}

}  // namespace
}  // namespace codl

namespace codl {
namespace {

TEST(WrapWordsTest, WrapsAtWidthKeepsTheFirstLinesIndentAndIndentsTheRest) {
  EXPECT_EQ(WrapWords("    warning: one two three four", 20, "        "),
            "    warning: one two\n        three four");
  EXPECT_EQ(WrapWords("short", 20, "  "), "short");
  EXPECT_EQ(WrapWords("averyveryverylongword and", 10, "  "), "averyveryverylongword\n  and")
      << "a word longer than the width stays whole";
  EXPECT_EQ(WrapWords("", 10, "  "), "");
}

}  // namespace
}  // namespace codl
