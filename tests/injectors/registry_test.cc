// The registry and the Descriptor contract, over EVERY registered injector (a new one is covered
// without editing this file): contract, capability flags, smoke options, victim_env names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "injectors/core/registry.h"
#include "injectors/core/victim_env.h"

namespace codl::injectors {
namespace {

using ::testing::HasSubstr;

class EachRegisteredInjector : public ::testing::TestWithParam<std::string> {
 protected:
  const Descriptor& D() {
    const Descriptor* d = FindDescriptor(GetParam());
    EXPECT_NE(d, nullptr);
    return *d;
  }
};

TEST_P(EachRegisteredInjector, KeepsTheDescriptorContract) {
  EXPECT_EQ(D().name, GetParam());
  EXPECT_EQ(CheckDescriptorContract(D()).message(), "");
  EXPECT_FALSE(D().summary.empty());
  EXPECT_FALSE(D().unit_help.empty());
}

// Smoke options go through the full parse, cross-option rules (CheckOptions) included.
TEST_P(EachRegisteredInjector, SmokeOptionsPassTheFullParse) {
  EXPECT_EQ(ValidateOptions(GetParam(), D().smoke_options).message(), "");
}

// The controller fills ranks/rank/rendezvous_key in, the agent the rendezvous_option: a collective
// injector must accept them, and a one-rank run must need no rendezvous at all.
TEST_P(EachRegisteredInjector, CollectiveInjectorsAcceptWhatTheControllerFillsIn) {
  if (!D().capabilities.collective) GTEST_SKIP() << GetParam() << " is not collective";
  auto options = D().smoke_options;
  options["ranks"] = "1";
  options["rank"] = "0";
  EXPECT_EQ(ValidateOptions(GetParam(), options).message(), "");
  options["ranks"] = "2";
  options["rank"] = "1";
  EXPECT_NE(ValidateOptions(GetParam(), options).message(), "")
      << "rank 1 without the rendezvous value";
}

INSTANTIATE_TEST_SUITE_P(Registry, EachRegisteredInjector, ::testing::ValuesIn(InjectorNames()),
                         [](const auto& info) { return info.param; });

Descriptor Valid() {
  Descriptor d;
  d.name = "x";
  d.resource = "r";
  d.unit = "units/s";
  d.options = {IntOption("ranks", "1", 1, 64, "ranks"), IntOption("rank", "0", 0, 63, "rank"),
               StringOption("rendezvous_key", "", "key"), StringOption("id", "", "value")};
  return d;
}

TEST(DescriptorContractTest, CollectiveNeedsTheRendezvousOptions) {
  Descriptor d = Valid();
  d.capabilities.collective = true;
  EXPECT_EQ(CheckDescriptorContract(d).message(),
            "a collective injector must name its rendezvous_option");
  d.capabilities.rendezvous_option = "id";
  EXPECT_EQ(CheckDescriptorContract(d).message(), "");
  d.capabilities.rendezvous_option = "nosuch";
  EXPECT_EQ(CheckDescriptorContract(d).message(), "collective needs string option 'nosuch'");
  d.capabilities.rendezvous_option = "id";
  d.options.erase(d.options.begin());  // no 'ranks'
  EXPECT_EQ(CheckDescriptorContract(d).message(), "collective needs int option 'ranks'");
}

TEST(DescriptorContractTest, RendezvousOptionWithoutCollectiveIsABug) {
  Descriptor d = Valid();
  d.capabilities.rendezvous_option = "id";
  EXPECT_EQ(CheckDescriptorContract(d).message(), "rendezvous_option is set but collective is not");
}

TEST(DescriptorContractTest, SmokeOptionsMustBeValidOptions) {
  Descriptor d = Valid();
  d.smoke_options = {{"nosuch", "1"}};
  EXPECT_EQ(CheckDescriptorContract(d).message(), "smoke option 'nosuch' is not an option");
  d.smoke_options = {{"ranks", "0"}};
  EXPECT_THAT(CheckDescriptorContract(d).message(), HasSubstr("smoke option 'ranks': "));
}

// Validation keeps its code: what the user wrote is wrong (invalid-argument), whether the core's
// table check or an injector's CheckOptions finds it; a broken descriptor is a bug (internal).
TEST(RegistryStatusTest, ProblemsCarryTheirCode) {
  EXPECT_TRUE(ValidateInjectorName("noop").ok());
  EXPECT_EQ(ValidateInjectorName("nop").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateOption("noop", "threads", "2").ok());
  EXPECT_EQ(ValidateOption("noop", "threads", "0").code(), StatusCode::kInvalidArgument);
  const Status pair = ValidateOptions("net", {{"ranks", "3"}});
  EXPECT_EQ(pair.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(pair.message(), HasSubstr("net: ranks 3: a net antagonist is one receiver/sender"));
  Descriptor d = *FindDescriptor("noop");
  d.options.push_back(IntOption("threads", "1", 1, 2, "again"));
  EXPECT_EQ(CheckDescriptorContract(d).code(), StatusCode::kInternal);
  EXPECT_EQ(CheckDescriptorContract(d).message(), "option 'threads' is declared twice");
}

TEST(VictimEnvTest, OnlySafeNamesAreExportable) {
  for (const char* ok : {"CUDA_MPS_PIPE_DIRECTORY", "NCCL_SOCKET_IFNAME", "X", "A1_B"}) {
    EXPECT_TRUE(IsExportableEnvName(ok)) << ok;
  }
  for (const char* bad : {"", "LD_PRELOAD", "LD_LIBRARY_PATH", "PATH", "IFS", "BASH_ENV", "HOME",
                          "lower", "_X", "1X", "A-B", "A=B", "A B"}) {
    EXPECT_FALSE(IsExportableEnvName(bad)) << bad;
  }
}

}  // namespace
}  // namespace codl::injectors
