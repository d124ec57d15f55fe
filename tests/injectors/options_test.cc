// Option tables: every message a user can get for a bad --set, exactly as printed, plus the
// typed values an injector receives and the registry's contract checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "injectors/core/options.h"
#include "injectors/core/registry.h"

namespace codl::injectors {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadOption {
  std::string injector, key, value, message;
};

class BadOptionTest : public ::testing::TestWithParam<BadOption> {};

TEST_P(BadOptionTest, ExactMessage) {
  const BadOption& c = GetParam();
  EXPECT_EQ(ValidateOption(c.injector, c.key, c.value).message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadOptionTest,
    ::testing::Values(
        BadOption{"io_uring", "queue_depth", "5000",
                  "option 'queue_depth': 5000 is out of range [1, 4096]"},
        BadOption{"io_uring", "queue_depth", "0",
                  "option 'queue_depth': 0 is out of range [1, 4096]"},
        BadOption{"io_uring", "queue_depth", "-3",
                  "option 'queue_depth': -3 is out of range [1, 4096]"},
        BadOption{"io_uring", "queue_depth", "1.5",
                  "option 'queue_depth': '1.5' is not an integer"},
        BadOption{"io_uring", "queue_depth", "lots",
                  "option 'queue_depth': 'lots' is not an integer"},
        BadOption{"io_uring", "block_size", "0",
                  "option 'block_size': 0 is out of range [512, 64MiB]"},
        BadOption{"io_uring", "block_size", "100",
                  "option 'block_size': 100 is out of range [512, 64MiB]"},
        BadOption{"io_uring", "block_size", "128MiB",
                  "option 'block_size': 128MiB is out of range [512, 64MiB]"},
        BadOption{"io_uring", "block_size", "-4KiB",
                  "option 'block_size': size '-4KiB' must not be negative"},
        BadOption{"io_uring", "block_size", "abc",
                  "option 'block_size': 'abc' is not a size (examples: 4096, 4KiB, 1MiB, 2GB)"},
        BadOption{"io_uring", "block_size", "4XB",
                  "option 'block_size': '4XB': unknown size unit 'XB' (use B, kB, MB, GB, TB, KiB, "
                  "MiB, GiB, TiB)"},
        BadOption{"io_uring", "mode", "sideways",
                  "option 'mode': 'sideways' is not one of: read, write, randread, randwrite, rw, "
                  "randrw"},
        BadOption{"io_uring", "direct", "maybe",
                  "option 'direct': 'maybe' is not a boolean (use true or false)"},
        BadOption{"io_uring", "rwmix_read", "101",
                  "option 'rwmix_read': 101 is out of range [0, 100]"},
        BadOption{"io_uring", "file_size", "512KiB",
                  "option 'file_size': 512KiB is out of range [1MiB, 16TiB]"},
        BadOption{"io_uring", "foo", "1",
                  "unknown option 'foo' for injector 'io_uring' (known: dir, mode, rwmix_read, "
                  "block_size, "
                  "queue_depth, complete_batch, submit_batch, nr_files, file_size, prefill, "
                  "direct, "
                  "registered_buffers, "
                  "registered_files, huge_buffers, "
                  "sqpoll)"},
        BadOption{"memcpy", "threads", "0", "option 'threads': 0 is out of range [1, 1024]"},
        BadOption{"memcpy", "buffer_size", "1KiB",
                  "option 'buffer_size': 1KiB is out of range [64KiB, 64GiB]"},
        BadOption{"memcpy", "nontemporal", "always",
                  "option 'nontemporal': 'always' is not one of: auto, on, off"},
        BadOption{"noop", "capacity", "-1",
                  "option 'capacity': -1 is out of range [0, 1000000000000]"}));

TEST(OptionsTest, GoodValuesPass) {
  EXPECT_EQ(ValidateOption("io_uring", "queue_depth", "4096").message(), "");
  EXPECT_EQ(ValidateOption("io_uring", "queue_depth", "1").message(), "");
  EXPECT_EQ(ValidateOption("io_uring", "block_size", "4KiB").message(), "");
  EXPECT_EQ(ValidateOption("io_uring", "block_size", "64MiB").message(), "");
  EXPECT_EQ(ValidateOption("io_uring", "direct", "false").message(), "");
  EXPECT_EQ(ValidateOption("memcpy", "pin", "0").message(), "");
}

TEST(OptionsTest, UnknownInjectorNamesTheKnownOnes) {
  const std::string msg = ValidateInjectorName("nope").message();
  EXPECT_THAT(msg, StartsWith("unknown injector 'nope' (known: noop, memcpy, io_uring"));
  EXPECT_THAT(ValidateInjectorName("memcopy").message(),
              StartsWith("unknown injector 'memcopy' (did you mean 'memcpy'?) (known: noop, "));
  EXPECT_THAT(ValidateInjectorName("zzzzzzzz").message(),
              StartsWith("unknown injector 'zzzzzzzz' (known:"));
  EXPECT_EQ(ValidateOption("nope", "a", "b").message(), msg);
  EXPECT_EQ(ValidateInjectorName("io_uring").message(), "");
}

TEST(OptionsTest, CrossOptionChecks) {
  EXPECT_THAT(
      ValidateOptions("io_uring", {{"queue_depth", "4096"}, {"block_size", "64MiB"}}).message(),
      HasSubstr("options 'queue_depth' x 'block_size' = 4096 x 64MiB needs 256.00 GiB"));
  EXPECT_EQ(ValidateOptions("io_uring", {{"block_size", "4MiB"}, {"file_size", "2MiB"}}).message(),
            "option 'file_size' (2MiB) must be at least 'block_size' (4MiB)");
  EXPECT_EQ(ValidateOptions("io_uring", {{"block_size", "1000"}}).message(),
            "option 'block_size': 1000 must be a multiple of 512 with direct=true (O_DIRECT)");
  EXPECT_EQ(ValidateOptions("io_uring", {{"block_size", "1000"}, {"direct", "false"}}).message(),
            "");
  EXPECT_EQ(ValidateOptions("io_uring", {{"queue_depth", "8"}, {"complete_batch", "9"}}).message(),
            "option 'complete_batch' (9) must not exceed 'queue_depth' (8)");
  EXPECT_EQ(ValidateOptions("io_uring", {{"queue_depth", "8"}, {"submit_batch", "9"}}).message(),
            "option 'submit_batch' (9) must not exceed 'queue_depth' (8)");
  EXPECT_EQ(ValidateOptions("io_uring", {{"queue_depth", "8"}, {"submit_batch", "8"}}).message(),
            "");
  EXPECT_EQ(ValidateOptions("memcpy", {{"pin", "zero"}}).message(),
            "option 'pin': 'zero' is not 'none' or a CPU list like 0-3,6");
  EXPECT_EQ(ValidateOptions("memcpy", {{"pin", "4000"}}).message(),
            "option 'pin': CPU 4000 is not available to this process");
  EXPECT_EQ(ValidateOptions("memcpy", {{"buffer_size", "1MiB"}, {"chunk_size", "2MiB"}}).message(),
            "option 'chunk_size' (2MiB) must not exceed 'buffer_size' (1MiB)");
  EXPECT_EQ(ValidateOptions("memcpy", {{"threads", "1"}}).message(), "");
  EXPECT_EQ(ValidateOptions("memcpy", {{"kernel", "sequential"}, {"nontemporal", "off"}}).message(),
            "option 'kernel' (sequential) picks a streaming-store kernel, but 'nontemporal' is "
            "off (regular stores copy with libc memcpy)");
  EXPECT_EQ(ValidateOptions("memcpy", {{"kernel", "sequential"}}).message(), "");
  EXPECT_EQ(ValidateOptions("memcpy", {{"kernel", "auto"}, {"nontemporal", "off"}}).message(), "");
}

TEST(OptionsTest, TypedValuesAndDefaults) {
  const std::vector<OptionSpec> table = {
      IntOption("n", "3", 1, 10, "count"),
      SizeOption("bs", "4KiB", 512, 1e9, "block"),
      DurationOption("t", "2s", 0.001, 3600, "time"),
      RateOption("r", "1GiB/s", 0, 1e12, "rate", "bytes/s"),
      BoolOption("b", "true", "flag"),
      EnumOption("e", "x", {"x", "y"}, "choice"),
      StringOption("s", "", "text"),
      DoubleOption("d", "0.5", 0, 1, "fraction"),
  };
  auto v = ParseOptions("t", table, {{"bs", "1MiB"}, {"t", "250ms"}, {"e", "y"}, {"n", "2k"}});
  ASSERT_FALSE(v.ok());  // 2k = 2000 > 10
  EXPECT_EQ(v.error(), "option 'n': 2k is out of range [1, 10]");
  v = ParseOptions("t", table, {{"bs", "1MiB"}, {"t", "250ms"}, {"e", "y"}});
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(v->Int("n"), 3);
  EXPECT_FALSE(v->WasSet("n"));
  EXPECT_EQ(v->Size("bs"), 1048576u);
  EXPECT_TRUE(v->WasSet("bs"));
  EXPECT_EQ(v->Text("bs"), "1MiB");
  EXPECT_DOUBLE_EQ(v->Duration("t"), 0.25);
  EXPECT_DOUBLE_EQ(v->Rate("r"), 1024.0 * 1024 * 1024);
  EXPECT_TRUE(v->Bool("b"));
  EXPECT_EQ(v->String("e"), "y");
  EXPECT_EQ(v->String("s"), "");
  EXPECT_DOUBLE_EQ(v->Double("d"), 0.5);
  EXPECT_EQ(FormatRange(table[2]), "[1ms, 3600s]");
  EXPECT_EQ(FormatRange(table[1]), "[512, 1000000000]");
}

TEST(OptionsTest, EveryRegisteredInjectorKeepsTheContract) {
  for (const auto& name : InjectorNames()) {
    const Descriptor* d = FindDescriptor(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(CheckDescriptorContract(*d).message(), "") << name;
    auto inj = CreateInjector(name);
    ASSERT_NE(inj, nullptr);
    EXPECT_EQ(inj->descriptor().name, name);
    // Defaults alone must form a valid option set.
    EXPECT_EQ(ValidateOptions(name, {}).message(), "") << name;
  }
}

TEST(OptionsTest, ContractViolationsAreCaught) {
  Descriptor d{"x", "r", "u", "s", "h", {IntOption("a", "0", 1, 5, "help")}};
  EXPECT_THAT(CheckDescriptorContract(d).message(), HasSubstr("default of option 'a'"));
  d.options = {IntOption("a", "1", 1, 5, "help"), IntOption("a", "1", 1, 5, "help")};
  EXPECT_EQ(CheckDescriptorContract(d).message(), "option 'a' is declared twice");
  d.options = {EnumOption("m", "q", {}, "help")};
  EXPECT_EQ(CheckDescriptorContract(d).message(), "enum option 'm' has no choices");
  d.options = {IntOption("a", "1", 1, 5, "")};
  EXPECT_EQ(CheckDescriptorContract(d).message(), "option 'a' has no help");
}

}  // namespace
}  // namespace codl::injectors
