#include "lib/common/json_line.h"

#include <cmath>

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(JsonLine, BuildsOneObject) {
  JsonLine j;
  j.Add("t_s", 0.25).Add("n", 3).Add("ok", true).Add("unit", "bytes/s");
  j.AddObject("phases", {{"read_s", 0.5}});
  EXPECT_EQ(j.str(), R"({"t_s":0.25,"n":3,"ok":true,"unit":"bytes/s","phases":{"read_s":0.5}})");
}

TEST(JsonLine, EscapesAndNonFinite) {
  JsonLine j;
  j.Add("s", "a\"b\\c\n").Add("x", std::nan(""));
  EXPECT_EQ(j.str(), R"({"s":"a\"b\\c\n","x":null})");
}

}  // namespace
}  // namespace codl
