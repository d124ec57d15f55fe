// The one CPU-list parser (lib/common/cpu_list.h): Linux's "0-3,6" format, as the experiment
// parser, the agent and the injectors read it.
#include "lib/common/cpu_list.h"

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(CpuList, ParsesRangesAndFormatsCanonically) {
  auto cpus = ParseCpuList(" 6, 0-3 ");
  ASSERT_TRUE(cpus.ok()) << cpus.error();
  EXPECT_EQ(*cpus, (std::set<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(FormatCpuList(*cpus), "0-3,6");
  EXPECT_EQ(FormatCpuList({0, 1, 4, 5, 6, 9}), "0,1,4-6,9");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuList, RejectsMalformedLists) {
  for (const char* bad :
       {"", " ", "a", "1-", "-1", "3-1", "0,,1", "1,", "1,1", "0-2,2", "0x1", "1x", "none"}) {
    EXPECT_FALSE(ParseCpuList(bad).ok()) << "'" << bad << "'";
  }
  EXPECT_EQ(ParseCpuList("3-1").error(), "reversed range '3-1'");
  EXPECT_EQ(ParseCpuList("1,1").error(), "CPU 1 appears twice in '1,1'");
}

TEST(CpuList, TheLimitIsAParameter) {
  EXPECT_TRUE(ParseCpuList("4095").ok()) << "the default: beyond any real machine";
  EXPECT_EQ(ParseCpuList("4096").error(), "CPU 4096 is out of range 0-4095");
  EXPECT_EQ(ParseCpuList("0-5000").error(), "CPU 5000 is out of range 0-4095");
  EXPECT_TRUE(ParseCpuList("1023", 1023).ok());
  EXPECT_EQ(ParseCpuList("1000-1024", 1023).error(), "CPU 1024 is out of range 0-1023");
}

}  // namespace
}  // namespace codl
