// Issue 48, item 6 (lib/common/tunables.h, "gRPC keepalive"): a quiet stream is never dropped by
// keepalive. Clients ping a connection with a call open every 10 s; with gRPC's server default
// (a ping more often than every 5 minutes without data is a strike) the controller closed a
// quiet `watch` with GOAWAY `too_many_pings`. Here a watch stays quiet for 45 s — a trial whose
// victim sleeps — and still receives the experiment's end.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/integration/cluster_harness.h"

namespace codl::testing {
namespace {

class KeepaliveTest : public ClusterTest {};

TEST_F(KeepaliveTest, AQuietWatchOutlivesTheKeepaliveInterval) {
  Cluster c(dir_);
  c.StartController();
  c.StartAgent("a");
  ASSERT_TRUE(c.WaitForAgents(1)) << c.Logs();
  // The first trial's victim sleeps 45 s (no output, no event); the second returns at once.
  WriteFile(dir_ + "/exp.yaml",
            "name: quiet\n"
            "victim:\n"
            "  command: [sh, -c, 'test -e " +
                dir_ + "/slept || { touch " + dir_ +
                "/slept; sleep 45; }']\n"
                "  progress: {format: wall}\n"
                "  timeout: 120s\n"
                "antagonists:\n"
                "  - {name: n, injector: noop, levels: [1.0]}\n"
                "order: {randomize: false}\n"
                "settle: 1s\n"
                "repetitions: 1\n");
  auto sub = c.Ctl({"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err << c.Logs();
  const std::string id = Lines(sub.out).at(0);
  auto watch = c.Ctl({"watch", id, "-o", "json"}, 180);
  EXPECT_EQ(watch.exit_code, 0) << watch.out << watch.err << c.Logs();
  EXPECT_EQ(watch.err.find("too_many_pings"), std::string::npos) << watch.err;
  EXPECT_EQ(watch.err.find("GOAWAY"), std::string::npos) << watch.err;
  // It was quiet: some two consecutive updates are 40+ s apart, and the last says done.
  int64_t prev = 0, widest = 0;
  for (const std::string& line : Lines(watch.out)) {
    const size_t at = line.find("\"ts_unix_ms\":");
    if (at == std::string::npos) continue;
    const int64_t ts = std::stoll(line.substr(at + 13));
    if (prev > 0) widest = std::max(widest, ts - prev);
    prev = ts;
  }
  EXPECT_GT(widest, 40'000) << "the watch was never quiet for longer than the keepalive:\n"
                            << watch.out;
  ASSERT_FALSE(Lines(watch.out).empty());
  EXPECT_NE(Lines(watch.out).back().find("\"state\":\"done\""), std::string::npos) << watch.out;
}

}  // namespace
}  // namespace codl::testing
