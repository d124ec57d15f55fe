#include "lib/common/options.h"

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(FlagScanner, SeparateAndInlineValues) {
  const std::vector<std::string> args = {"--a", "1", "--b=2=3", "pos", "--c"};
  FlagScanner f(args);
  ASSERT_TRUE(f.Next());
  EXPECT_EQ(f.name(), "--a");
  EXPECT_TRUE(f.is_flag());
  EXPECT_EQ(*f.Value(), "1");
  ASSERT_TRUE(f.Next());
  EXPECT_EQ(f.name(), "--b");
  EXPECT_EQ(*f.Value(), "2=3");  // split at the first '='
  EXPECT_EQ(f.NoValue().error(), "--b takes no value");
  ASSERT_TRUE(f.Next());
  EXPECT_EQ(f.name(), "pos");
  EXPECT_FALSE(f.is_flag());
  ASSERT_TRUE(f.Next());
  EXPECT_TRUE(f.NoValue().ok());
  EXPECT_EQ(f.Value().error(), "--c needs a value");
  EXPECT_FALSE(f.Next());
}

TEST(FlagScanner, StartsWhereToldAndSplitsOnlyLongFlags) {
  const std::vector<std::string> args = {"prog", "-x=1", "k=v"};
  FlagScanner f(args, 1);
  ASSERT_TRUE(f.Next());
  EXPECT_EQ(f.name(), "-x=1");
  ASSERT_TRUE(f.Next());
  EXPECT_EQ(f.name(), "k=v");
  EXPECT_FALSE(f.Next());
}

TEST(OptionTable, FlagsAreNamedAsTypedKeysAsOptions) {
  auto flag = ParseOptionValue(IntOption("--steps", "1", 1, 10, ""), "0");
  ASSERT_FALSE(flag.ok());
  EXPECT_EQ(flag.error(), "--steps: 0 is out of range [1, 10]");
  auto key = ParseOptionValue(IntOption("queue_depth", "1", 1, 4096, ""), "5000");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error(), "option 'queue_depth': 5000 is out of range [1, 4096]");
}

TEST(OptionTable, UintIsAPlainFullRangeInteger) {
  const OptionSpec seed = UintOption("--seed", "1", "");
  auto max = ParseOptionValue(seed, "18446744073709551615");
  ASSERT_TRUE(max.ok()) << max.error();
  EXPECT_EQ(std::get<uint64_t>(*max), UINT64_MAX);
  for (const char* bad : {"-1", "1k", "", "18446744073709551616"}) {
    auto r = ParseOptionValue(seed, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error(), "--seed: '" + std::string(bad) +
                             "' is not an unsigned integer in [0, 18446744073709551615]");
  }
  auto v = ParseOptionTable("t", {seed}, {});
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(v->Uint("--seed"), 1u);
}

TEST(OptionTable, OwnerNamedInMessages) {
  const std::vector<OptionSpec> table = {IntOption("n", "0", 1, 2, "")};
  auto bad_default = ParseOptionTable("codl-victim run", table, {});
  ASSERT_FALSE(bad_default.ok());
  EXPECT_EQ(bad_default.error(),
            "codl-victim run has an invalid default: option 'n': 0 is out of range [1, 2]");
  auto unknown = ParseOptionTable("injector 'x'", table, {{"m", "1"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error(), "unknown option 'm' for injector 'x' (known: n)");
}

TEST(OptionTable, HelpTableHasOneAlignedRowPerOption) {
  const std::vector<OptionSpec> table = {
      SizeOption("block", "4KiB", 512, 1 << 20, "bytes per op"),
      EnumOption("mode", "read", {"read", "write"}, "direction"),
      StringOption("dir", "", "where"),
  };
  const std::string text = RenderOptionTable(table, "  ");
  const std::string expected =
      "  name                 type      default        range                  help\n"
      "  block                size      4KiB           [512, 1MiB]            bytes per op\n"
      "  mode                 enum      read           read|write             direction\n"
      "  dir                  string    \"\"                                    where\n";
  EXPECT_EQ(text, expected);
}

}  // namespace
}  // namespace codl
