// The one typed reader: each value kind, the quoted-scalar rule, and FILE:LINE:COL errors.
#include "lib/yaml/typed.h"
#include "lib/yaml/yaml_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace codl::yaml {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Reads key `v` of the one-line document `text` with `read`; returns the error text or "".
std::string ErrorOf(const std::string& text, const std::function<void(const YAML::Node&)>& read) {
  Status s = ReadDocument(text, "f.yaml", [&](const YAML::Node& root) { read(root["v"]); });
  return s.ok() ? "" : s.error();
}

template <class F>
auto ValueOf(const std::string& text, F read) {
  decltype(read(YAML::Node())) out{};
  Status s = ReadDocument(text, "f.yaml", [&](const YAML::Node& root) { out = read(root["v"]); });
  EXPECT_TRUE(s.ok()) << s.error();
  return out;
}

TEST(TypedBool, PlainTrueFalseAndYaml11Words) {
  auto b = [](const YAML::Node& n) { return Bool(n, "v"); };
  EXPECT_TRUE(ValueOf("v: true\n", b));
  EXPECT_FALSE(ValueOf("v: false\n", b));
  EXPECT_TRUE(ValueOf("v: yes\n", b));
  EXPECT_FALSE(ValueOf("v: off\n", b));
}

TEST(TypedBool, QuotedTrueIsAStringAndAnError) {
  auto b = [](const YAML::Node& n) { Bool(n, "v"); };
  const std::string why = " (quoted values are strings: drop the quotes)";
  EXPECT_EQ(ErrorOf("v: \"true\"\n", b),
            "f.yaml:1:4: v: expected true or false, got the string \"true\"" + why);
  EXPECT_EQ(ErrorOf("v: 'false'\n", b),
            "f.yaml:1:4: v: expected true or false, got the string \"false\"" + why);
  EXPECT_EQ(ErrorOf("v: maybe\n", b), "f.yaml:1:4: v: expected true or false, got 'maybe'");
  EXPECT_EQ(ErrorOf("v: [true]\n", b), "f.yaml:1:4: v: expected true or false, got a list");
}

TEST(TypedInteger, RangeAndGarbage) {
  auto i = [](const YAML::Node& n) { return Integer(n, "v", 1, 10); };
  EXPECT_EQ(ValueOf("v: 7\n", i), 7);
  EXPECT_EQ(ErrorOf("v: 11\n", i), "f.yaml:1:4: v: 11 is out of range [1, 10]");
  EXPECT_EQ(ErrorOf("v: 2.5\n", i), "f.yaml:1:4: v: expected an integer, got '2.5'");
  EXPECT_EQ(ErrorOf("v: 0x10\n", i), "f.yaml:1:4: v: expected an integer, got '0x10'");
  EXPECT_THAT(ErrorOf("v: '3'\n", i),
              ::testing::StartsWith("f.yaml:1:4: v: expected an integer, got the string \"3\""));
  auto u = [](const YAML::Node& n) { return Unsigned64(n, "v"); };
  EXPECT_EQ(ValueOf("v: 18446744073709551615\n", u), UINT64_MAX);
  EXPECT_EQ(ErrorOf("v: -5\n", u), "f.yaml:1:4: v: expected an unsigned 64-bit integer, got '-5'");
}

TEST(TypedNumber, FiniteDecimalsOnly) {
  auto d = [](const YAML::Node& n) { return Number(n, "v"); };
  EXPECT_DOUBLE_EQ(ValueOf("v: 0.25\n", d), 0.25);
  EXPECT_DOUBLE_EQ(ValueOf("v: -1e3\n", d), -1000);
  for (const char* bad : {"v: .inf\n", "v: nan\n", "v: inf\n", "v: high\n", "v: 1.5x\n"}) {
    EXPECT_THAT(ErrorOf(bad, d), ::testing::StartsWith("f.yaml:1:4: v: expected a number, got '"))
        << bad;
  }
  EXPECT_THAT(ErrorOf("v: \"0.5\"\n", d),
              ::testing::StartsWith("f.yaml:1:4: v: expected a number, got the string \"0.5\""));
}

TEST(TypedDurationAndSize, UnitsAndQuotedTextIsFine) {
  auto dur = [](const YAML::Node& n) { return Duration(n, "v", /*positive=*/true); };
  EXPECT_DOUBLE_EQ(ValueOf("v: 500ms\n", dur), 0.5);
  EXPECT_DOUBLE_EQ(ValueOf("v: \"30s\"\n", dur), 30);  // text by nature: quoting is fine
  EXPECT_DOUBLE_EQ(ValueOf("v: 2\n", dur), 2);
  EXPECT_EQ(ErrorOf("v: 0s\n", dur), "f.yaml:1:4: v: '0s' must be greater than 0");
  EXPECT_THAT(ErrorOf("v: 3 days\n", dur),
              ::testing::StartsWith("f.yaml:1:4: v: '3 days': unknown duration unit"));
  auto size = [](const YAML::Node& n) { return Size(n, "v"); };
  EXPECT_EQ(ValueOf("v: 4KiB\n", size), 4096u);
  EXPECT_EQ(ValueOf("v: '1k'\n", size), 1000u);
  EXPECT_THAT(ErrorOf("v: lots\n", size), ::testing::StartsWith("f.yaml:1:4: v: 'lots'"));
}

TEST(TypedString, AnyScalarAndNonEmpty) {
  auto s = [](const YAML::Node& n) { return String(n, "v"); };
  EXPECT_EQ(ValueOf("v: \"true\"\n", s), "true");
  EXPECT_EQ(ValueOf("v: 12\n", s), "12");
  EXPECT_EQ(ErrorOf("v: {a: b}\n", [](const YAML::Node& n) { String(n, "v"); }),
            "f.yaml:1:4: v: expected a string, got a mapping");
  EXPECT_EQ(ErrorOf("v: ''\n", [](const YAML::Node& n) { NonEmptyString(n, "v"); }),
            "f.yaml:1:4: v: must not be empty");
}

TEST(TypedList, ElementsAreNamedByIndex) {
  auto l = [](const YAML::Node& n) { return StringList(n, "v"); };
  EXPECT_THAT(ValueOf("v: [a, 'b', 3]\n", l), ElementsAre("a", "b", "3"));
  EXPECT_EQ(ErrorOf("v: a\n", [](const YAML::Node& n) { StringList(n, "v", "a list of hosts"); }),
            "f.yaml:1:4: v: expected a list of hosts, got a scalar");
  EXPECT_EQ(ErrorOf("v: [a, [b]]\n", [](const YAML::Node& n) { StringList(n, "v"); }),
            "f.yaml:1:8: v[1]: expected a string, got a list");
}

TEST(TypedMap, KeysCheckedAtTheKeyValuesAtTheValue) {
  auto m = [](const YAML::Node& n) { return StringMap(n, "v"); };
  EXPECT_THAT(ValueOf("v: {a: 1, b: 'x'}\n", m), ElementsAre(Pair("a", "1"), Pair("b", "x")));
  EXPECT_EQ(
      ErrorOf("v: [a]\n", [](const YAML::Node& n) { StringMap(n, "v", "a mapping of labels"); }),
      "f.yaml:1:4: v: expected a mapping of labels, got a list");
  EXPECT_EQ(ErrorOf("v: {a: [1]}\n", [](const YAML::Node& n) { StringMap(n, "v"); }),
            "f.yaml:1:8: v.a: expected a string, got a list");
  EXPECT_EQ(ErrorOf("v:\n  a: 1\n  a: 2\n", [](const YAML::Node& n) { StringMap(n, "v"); }),
            "f.yaml:3:3: v: duplicate key 'a'");
  auto no_x = [](const std::string& k) { return k == "x" ? std::string("'x' is reserved") : ""; };
  EXPECT_EQ(ErrorOf("v: {a: 1, x: 2}\n",
                    [&](const YAML::Node& n) { StringMap(n, "v", "a mapping", no_x); }),
            "f.yaml:1:11: v: 'x' is reserved");
}

TEST(ReadDocument, SyntaxErrorsAndExtraDocumentsHaveAPosition) {
  auto nothing = [](const YAML::Node&) {};
  Status syntax = ReadDocument("a: [1\n", "f.yaml", nothing);
  EXPECT_EQ(syntax.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(syntax.error(), ::testing::StartsWith("f.yaml:"));
  EXPECT_THAT(syntax.error(), ::testing::HasSubstr(": YAML syntax error: "));
  Status two = ReadDocument("a: 1\n---\nb: 2\n", "f.yaml", nothing);
  EXPECT_EQ(two.error(), "f.yaml:3:1: expected one YAML document, found 2");
  bool saw_null = false;
  EXPECT_TRUE(ReadDocument("# only a comment\n", "f.yaml", [&](const YAML::Node& root) {
                saw_null = root.IsNull();
              }).ok());
  EXPECT_TRUE(saw_null);
}

}  // namespace
}  // namespace codl::yaml

namespace codl::yaml {
namespace {

TEST(MapReaderKeys, ATypoGetsASuggestionAndTheList) {
  Status s = ReadDocument("name: x\nrepetitons: 3\n", "e.yaml", [](const YAML::Node& root) {
    MapReader m(root, "", {"name", "repetitions", "seed"});
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(),
            "e.yaml:2:1: unknown top-level key 'repetitons' (did you mean 'repetitions'?) "
            "(expected one of: name, repetitions, seed)");
}

TEST(MapReaderKeys, AnUnrelatedKeyGetsOnlyTheList) {
  Status s = ReadDocument("zzz: 1\n", "e.yaml", [](const YAML::Node& root) {
    MapReader m(root, "", {"name", "seed"});
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "e.yaml:1:1: unknown top-level key 'zzz' (expected one of: name, seed)");
}

}  // namespace
}  // namespace codl::yaml
