// The codl-inject <-> agent protocol (injectors/core/protocol.h): every record's exact line
// (what scripts and older readers see), its round trip through Parse, how ParseRecord tells
// records from other text, the hex codec, and the host services codl-inject implements with it.
#include "injectors/core/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "injectors/codl-inject/output.h"
#include "injectors/core/registry.h"

namespace codl::injectors::protocol {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

template <class R>
R RoundTrip(const R& r) {
  const std::string line = r.Format();
  auto back = R::Parse(line);
  EXPECT_TRUE(back.ok()) << line << ": " << back.error();
  auto any = ParseRecord(line);
  EXPECT_TRUE(any.ok()) << line << ": " << any.error();
  if (any.ok()) {
    EXPECT_TRUE(std::holds_alternative<R>(*any)) << line;
    EXPECT_EQ(FormatRecord(*any), line);
  }
  return back.ok() ? *back : R{};
}

TEST(ProtocolTest, IntervalLineIsExactAndRoundTrips) {
  Interval r{0.2, 1.5e9, 2e9, "bytes/s", "run", true, {{"iops", 366210}}};
  EXPECT_EQ(r.Format(),
            R"({"t_s":0.2,"achieved":1.5e+09,"target":2e+09,"unit":"bytes/s","phase":"run",)"
            R"("saturated":true,"iops":366210})");
  const Interval b = RoundTrip(r);
  EXPECT_DOUBLE_EQ(b.t_s, 0.2);
  EXPECT_DOUBLE_EQ(b.achieved, 1.5e9);
  EXPECT_DOUBLE_EQ(b.target, 2e9);
  EXPECT_EQ(b.unit, "bytes/s");
  EXPECT_EQ(b.phase, "run");
  EXPECT_TRUE(b.saturated);
  EXPECT_EQ(b.extra, (std::map<std::string, double>{{"iops", 366210}}));
}

// What a hand-written or older line may leave out, and fields a newer writer may add.
TEST(ProtocolTest, IntervalDefaultsMissingFieldsAndIgnoresUnknownOnes) {
  auto r = Interval::Parse(R"({"t_s":0.1,"achieved":1,"target":0,"unit":"u","future":"x"})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->phase, "");
  EXPECT_FALSE(r->saturated);
  EXPECT_TRUE(r->extra.empty()) << "a string field is not an extra rate";
  EXPECT_FALSE(Interval::Parse(R"({"t_s":0.1})").ok()) << "an interval needs 'achieved'";
  EXPECT_EQ(Interval::Parse(R"({"t_s":0.1,"achieved":"fast"})").error(),
            "'achieved' must be a number");
}

TEST(ProtocolTest, SummaryLineIsExactAndRoundTrips) {
  Summary s;
  s.injector = "io_uring";
  s.unit = "bytes/s";
  s.mode = "level";
  s.target_rate = 1e9;
  s.achieved_rate = 9.5e8;
  s.peak_rate = 2e9;
  s.cov = 0.01;
  s.seconds = 10;
  s.level = 0.5;
  s.saturated = false;
  s.stopped_by_signal = true;
  s.extra = {{"iops", 231000}};
  s.notes = {"sqpoll off", "quote \" and\nnewline"};
  EXPECT_EQ(s.Format(),
            R"({"summary":true,"injector":"io_uring","unit":"bytes/s","mode":"level",)"
            R"("target_rate":1e+09,"achieved_rate":950000000,"peak_rate":2e+09,"cov":0.01,)"
            R"("seconds":10,"level":0.5,"saturated":false,"stopped_by_signal":true,)"
            R"("iops":231000,"notes":["sqpoll off","quote \" and\nnewline"]})");
  const Summary b = RoundTrip(s);
  EXPECT_EQ(b.injector, "io_uring");
  EXPECT_EQ(b.mode, "level");
  EXPECT_DOUBLE_EQ(b.achieved_rate, 9.5e8);
  EXPECT_DOUBLE_EQ(b.level, 0.5);
  EXPECT_TRUE(b.stopped_by_signal);
  EXPECT_EQ(b.extra, s.extra);
  EXPECT_EQ(b.notes, s.notes);

  Summary no_level = s;
  no_level.level = -1;
  no_level.notes.clear();
  EXPECT_THAT(no_level.Format(), Not(HasSubstr("\"level\":")));
  EXPECT_THAT(no_level.Format(), Not(HasSubstr("\"notes\"")));
  EXPECT_LT(RoundTrip(no_level).level, 0);
  EXPECT_FALSE(Summary::Parse(R"({"summary":false})").ok());
}

// Unix nanoseconds exceed a double's 53 bits: they must come back exactly.
TEST(ProtocolTest, StartAccountKeepsNanosecondsExact) {
  StartAccount a{1764620000123456789, 1764620000123000001, 1764619998000000007, 2.5, 3};
  EXPECT_EQ(a.Format(),
            R"({"started_unix_ns":1764620000123456789,"start_at_unix_ns":1764620000123000001,)"
            R"("ready_unix_ns":1764619998000000007,"setup_s":2.5,"setup_estimate_s":3})");
  const StartAccount b = RoundTrip(a);
  EXPECT_EQ(b.started_unix_ns, a.started_unix_ns);
  EXPECT_EQ(b.start_at_unix_ns, a.start_at_unix_ns);
  EXPECT_EQ(b.ready_unix_ns, a.ready_unix_ns);
  EXPECT_DOUBLE_EQ(b.setup_s, 2.5);
  EXPECT_DOUBLE_EQ(b.setup_estimate_s, 3);
  EXPECT_FALSE(StartAccount::Parse(R"({"started_unix_ns":1.5})").ok());
  EXPECT_FALSE(StartAccount::Parse(R"({"started_unix_ns":99999999999999999999})").ok());
}

TEST(ProtocolTest, FirstLoadOmitsAnUntrackedCompletion) {
  EXPECT_EQ((FirstLoad{5100, 5300}.Format()),
            R"({"first_load_unix_ns":5100,"first_done_unix_ns":5300})");
  EXPECT_EQ((FirstLoad{5100, 0}.Format()), R"({"first_load_unix_ns":5100})");
  EXPECT_EQ(RoundTrip(FirstLoad{5100, 5300}).first_done_unix_ns, 5300);
  EXPECT_EQ(RoundTrip(FirstLoad{5100, 0}).first_done_unix_ns, 0);
}

TEST(ProtocolTest, RendezvousPublishCarriesRawBytesAsHex) {
  EXPECT_EQ((RendezvousPublish{"exp42/trial3/nccl", std::string("\x00\xff", 2)}.Format()),
            R"({"rendezvous_publish":{"key":"exp42/trial3/nccl","value_hex":"00ff"}})");
  EXPECT_EQ((RendezvousPublish{"a\"b", std::string(1, '\0')}.Format()),
            R"({"rendezvous_publish":{"key":"a\"b","value_hex":"00"}})");
  std::mt19937 rng(7);
  std::string id(128, '\0');
  for (auto& c : id) c = static_cast<char>(rng());
  const RendezvousPublish b = RoundTrip(RendezvousPublish{"k", id});
  EXPECT_EQ(b.key, "k");
  EXPECT_EQ(b.value, id);
}

TEST(ProtocolTest, BrokenRendezvousIsARecordOfItsKindWithAReason) {
  std::string kind;
  auto r = ParseRecord(R"({"rendezvous_publish":{"key":"k","value_hex":"0g"}})", &kind);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kind, "rendezvous_publish");
  EXPECT_EQ(r.error(),
            "rendezvous_publish record: value_hex: invalid hex character 'g' at offset 1");
  EXPECT_EQ(ParseRecord(R"({"rendezvous_publish":{"value_hex":"00"}})").error(),
            "rendezvous_publish record: no key");
  EXPECT_EQ(ParseRecord(R"({"rendezvous_publish":"00"})").error(),
            "rendezvous_publish record: 'rendezvous_publish' must be an object");
}

TEST(ProtocolTest, VictimEnvKeepsStringsOnly) {
  EXPECT_EQ((VictimEnv{{{"B", "2"}, {"A", "x\"y"}}}.Format()),
            R"({"victim_env":{"A":"x\"y","B":"2"}})");
  EXPECT_EQ(VictimEnv{}.Format(), R"({"victim_env":{}})");
  EXPECT_EQ(
      RoundTrip(VictimEnv{{{"CUDA_MPS_PIPE_DIRECTORY", "/p"}}}).env.at("CUDA_MPS_PIPE_DIRECTORY"),
      "/p");
  auto r = VictimEnv::Parse(R"({"victim_env":{"A":"1","N":2,"O":{"x":"y"}}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->env, (std::map<std::string, std::string>{{"A", "1"}}));
}

TEST(ProtocolTest, GpuLabelsMpsNoteListEntryAndRemovedAreExact) {
  EXPECT_EQ((GpuLabels{{{"gpu_count", "2"}}}.Format()), R"({"gpu_labels":{"gpu_count":"2"}})");
  EXPECT_EQ(RoundTrip(GpuLabels{{{"gpu_count", "2"}, {"gpu_0_name", "H200"}}}).labels.size(), 2u);
  EXPECT_EQ(
      (MpsStatus{"/tmp/codl-mps/pipe", "/tmp/codl-mps/log", true}.Format()),
      R"({"mps":{"pipe_dir":"/tmp/codl-mps/pipe","log_dir":"/tmp/codl-mps/log","started":true}})");
  const MpsStatus m = RoundTrip(MpsStatus{"/p", "/l", false});
  EXPECT_EQ(m.pipe_dir, "/p");
  EXPECT_EQ(m.log_dir, "/l");
  EXPECT_FALSE(m.started);
  EXPECT_EQ(Note{"listening on 127.0.0.1:5201"}.Format(),
            R"({"note":"listening on 127.0.0.1:5201"})");
  EXPECT_EQ(RoundTrip(Note{"tab\tand \x01"}).text, "tab\tand \x01");
  EXPECT_EQ((ListEntry{"io_uring", "storage", "bytes/s", false, "built without liburing"}.Format()),
            R"({"name":"io_uring","resource":"storage","unit":"bytes/s","available":false,)"
            R"("reason":"built without liburing"})");
  const ListEntry e = RoundTrip(ListEntry{"noop", "nothing", "units/s", true, ""});
  EXPECT_EQ(e.name, "noop");
  EXPECT_TRUE(e.available);
  EXPECT_EQ(Removed{"/tmp/codl-inject.1"}.Format(), R"({"removed":"/tmp/codl-inject.1"})");
  EXPECT_EQ(RoundTrip(Removed{"/tmp/x"}).path, "/tmp/x");
}

// The first key names the record; anything else is text a reader skips (kNotFound).
TEST(ProtocolTest, ParseRecordTellsRecordsFromOtherText) {
  for (const char* text :
       {"", "codl-inject io_uring (max): achieved 2 GiB/s", "{", "[1,2]", "{}", R"({"unknown":1})",
        R"({"achieved":1,"t_s":0})", "{\"t_s\":1", R"({"t_s":0.1,"achieved":1} trailing)"}) {
    std::string kind = "x";
    auto r = ParseRecord(text, &kind);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.code(), StatusCode::kNotFound) << text << ": " << r.error();
    EXPECT_EQ(kind, "") << text;
  }
  std::string kind;
  auto r = ParseRecord(R"({"t_s":0.1,"achieved":null,"target":0})", &kind);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(kind, "t_s");
  EXPECT_TRUE(std::isnan(std::get<Interval>(*r).achieved)) << "null (a non-finite number) is NaN";
}

TEST(ProtocolTest, StringsDecodeEveryJsonEscape) {
  auto r = Note::Parse(R"({"note":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->text, "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_FALSE(Note::Parse(R"({"note":"\ud83d"})").ok()) << "unpaired surrogate";
  EXPECT_FALSE(Note::Parse("{\"note\":\"raw\ncontrol\"}").ok());
  EXPECT_FALSE(Note::Parse(R"({"note":"\x"})").ok());
  std::string deep = R"({"note":"x","n":)";
  for (int i = 0; i < 20; ++i) deep += "[";
  for (int i = 0; i < 20; ++i) deep += "]";
  EXPECT_THAT(Note::Parse(deep + "}").error(), HasSubstr("nested too deeply"));
}

TEST(HexTest, RoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  const std::string hex = HexEncode(all);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  auto back = HexDecode(hex);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, all);
  EXPECT_EQ(*HexDecode("00FFaB"), std::string("\x00\xff\xab", 3));
  EXPECT_EQ(*HexDecode(""), "");
}

TEST(HexTest, ErrorsAreExact) {
  EXPECT_EQ(HexDecode("abc").error(), "odd number of hex characters (3)");
  EXPECT_EQ(HexDecode("0123456789", 128).error(),
            "expected 256 hex characters (128 bytes), got 10");
  std::string hex(256, '0');
  hex[5] = 'g';
  EXPECT_EQ(HexDecode(hex, 128).error(), "invalid hex character 'g' at offset 5");
  hex[5] = '\x01';
  EXPECT_EQ(HexDecode(hex, 128).error(), "invalid hex character '\\x01' at offset 5");
  EXPECT_EQ(HexDecode("zz").code(), StatusCode::kInvalidArgument);
}

TEST(ProtocolTest, RendezvousFetchIsTheSetArgument) {
  const RendezvousFetch f{"unique_id", std::string("\x01\xab", 2)};
  EXPECT_EQ(f.Format(), "unique_id=01ab");
  EXPECT_EQ(f.OptionValue(), "01ab");
  auto b = RendezvousFetch::Parse(f.Format());
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->option, "unique_id");
  EXPECT_EQ(b->value, f.value);
  EXPECT_FALSE(RendezvousFetch::Parse("=01").ok());
  EXPECT_FALSE(RendezvousFetch::Parse("unique_id").ok());
  EXPECT_EQ(RendezvousFetch::DecodeValue("01ab", 2).value(), f.value);
  EXPECT_EQ(RendezvousFetch::DecodeValue("01ab", 3).error(),
            "expected 6 hex characters (3 bytes), got 4");
}

// codl-inject's side of HostServices: each request is checked against the injector's declared
// capabilities before anything reaches stdout.
TEST(StdoutHostServicesTest, RefusesWhatTheDescriptorDoesNotDeclare) {
  const Descriptor& noop = *FindDescriptor("noop");
  inject::StdoutHostServices plain(noop, /*json=*/true);
  EXPECT_EQ(plain.PublishRendezvous("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(plain.ExportVictimEnv({{"A", "1"}}).code(), StatusCode::kInternal);

  const Descriptor& mps = *FindDescriptor("mps_cotenant");
  inject::StdoutHostServices exporter(mps, /*json=*/true);
  EXPECT_EQ(exporter.ExportVictimEnv({{"LD_PRELOAD", "/evil.so"}}).code(), StatusCode::kInternal);
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(exporter.ExportVictimEnv({{"CUDA_MPS_PIPE_DIRECTORY", "/p"}}).ok());
  exporter.Note("hello");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "{\"victim_env\":{\"CUDA_MPS_PIPE_DIRECTORY\":\"/p\"}}\n{\"note\":\"hello\"}\n");
}

TEST(StdoutHostServicesTest, PublishesUnderTheRendezvousKeyOption) {
  auto nccl = CreateInjector("nccl");
  auto options =
      ParseInjectorOptions(*nccl, {{"ranks", "2"}, {"rank", "0"}, {"rendezvous_key", "t1/bg"}});
  ASSERT_TRUE(options.ok()) << options.error();
  inject::StdoutHostServices services(nccl->descriptor(), /*json=*/false);
  EXPECT_EQ(services.PublishRendezvous("x").code(), StatusCode::kFailedPrecondition)
      << "no options yet: no key";
  services.SetOptions(&*options);
  ::testing::internal::CaptureStdout();
  EXPECT_TRUE(services.PublishRendezvous(std::string("\x01\xab", 2)).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "{\"rendezvous_publish\":{\"key\":\"t1/bg\",\"value_hex\":\"01ab\"}}\n")
      << "published in human mode too: a person starting rank 1 copies it";
}

}  // namespace
}  // namespace codl::injectors::protocol
