// Issue 48, item 2 (lib/yaml/yaml_reader.h): a YAML document is bounded by what it expands to,
// not only by its size. A 980 kB experiment (a 500 kB anchored scalar and 120,000 aliases of
// it) sent through SubmitExperiment killed the controller with std::bad_alloc (about 60 GB
// needed); a 180 kB one cost `codlctl validate` 2 GB; the same bomb stored in a results file
// aborted `codlctl results --db`. Each is now a clear FILE:LINE:COL error, in bounded memory,
// and the process goes on.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "codl/v1/controller.grpc.pb.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"
#include "lib/yaml/yaml_reader.h"
#include "tests/integration/test_util.h"

extern char** environ;

namespace codl {
namespace {

using namespace codl::testing;

// `name: &s <scalar_bytes>` and `victim.command: [*s, *s, ...]` with `aliases` of them.
std::string AliasBomb(size_t scalar_bytes, size_t aliases) {
  std::string y = "name: &s " + std::string(scalar_bytes, 'x') + "\nvictim:\n  command: [";
  for (size_t i = 0; i < aliases; ++i) y += i ? ", *s" : "*s";
  return y + "]\n";
}

// The billion laughs: 9 levels of 10 aliases each, 90 aliases in all, 10^9 copies of "lol".
std::string NestedBomb() {
  std::string y = "l0: &l0 lol\n";
  for (int i = 1; i <= 9; ++i) {
    y += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) y += (j ? ", *l" : "*l") + std::to_string(i - 1);
    y += "]\n";
  }
  return y + "name: x\n";
}

Status Read(const std::string& text) {
  return yaml::ReadDocument(text, "bomb.yaml", [](const YAML::Node& root) {
    // What a reader does with it: materialize every scalar.
    std::function<size_t(const YAML::Node&)> walk = [&](const YAML::Node& n) -> size_t {
      size_t total = n.IsScalar() ? n.Scalar().size() : 0;
      if (n.IsSequence() || n.IsMap()) {
        for (const auto& c : n) total += n.IsMap() ? walk(c.second) : walk(c);
      }
      return total;
    };
    walk(root);
  });
}

TEST(YamlAliases, TooManyAliasesAreRefusedAtTheAliasThatCrossesTheLimit) {
  Status s = Read(AliasBomb(100, 1500));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // The 1001st alias: line 3, after "  command: [" and 1000 "*s, ".
  EXPECT_NE(s.message().find("bomb.yaml:3:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("more than 1000 aliases"), std::string::npos) << s.message();
}

TEST(YamlAliases, AnExpansionOverTheLimitIsRefusedFewAliasesOrMany) {
  for (const std::string& bomb : {NestedBomb(), AliasBomb(500'000, 20)}) {
    Status s = Read(bomb);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("expands to more than 4 MiB"), std::string::npos) << s.message();
    EXPECT_EQ(s.message().rfind("bomb.yaml:", 0), 0u) << s.message();
  }
}

TEST(YamlAliases, OrdinaryAnchorsAndMergeKeysStillWork) {
  const std::string ok =
      "name: &n anchors\n"
      "victim: {command: &c [codl-victim, run, --steps, '5']}\n"
      "antagonists:\n"
      "  - &cpu {name: cpu, injector: cpu, levels: [0.5]}\n"
      "  - <<: *cpu\n"
      "    name: cpu2\n";
  EXPECT_TRUE(Read(ok).ok()) << Read(ok).message();
  EXPECT_TRUE(Read(AliasBomb(1000, 1000)).ok()) << "1,000 aliases of 1 kB: 1 MB expanded";
}

// Runs argv to its end; its exit status and peak RSS (KiB).
std::pair<int, long> RunMeasured(const std::vector<std::string>& argv, const std::string& out) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) return {-1, 0};
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), ru.ru_maxrss};
}

// The sanitizer builds carry their shadow memory: a bounded process stays well under this,
// an expanding one needs gigabytes.
constexpr long kRssBoundKiB = 600 * 1024;

class YamlAliasesCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-yaml-aliases"); }
  void TearDown() override { RemoveTree(dir_); }
  std::string dir_;
};

TEST_F(YamlAliasesCli, ValidateGivesTheErrorInBoundedMemory) {
  // 180 kB: 2 GB and 10 s of `codlctl validate` before.
  WriteFile(dir_ + "/bomb.yaml", AliasBomb(100'000, 20'000));
  auto [code, rss] = RunMeasured({Bin("codlctl"), "validate", dir_ + "/bomb.yaml"}, dir_ + "/out");
  const std::string out = ReadFile(dir_ + "/out");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(dir_ + "/bomb.yaml:3:"), std::string::npos) << out;
  EXPECT_LT(rss, kRssBoundKiB) << out;
}

TEST_F(YamlAliasesCli, AStoredBombInAResultsFileIsAnErrorNotAnAbort) {
  const std::string db = dir_ + "/results.db";
  {
    auto store = store::Store::Open(db);
    ASSERT_TRUE(store.ok()) << store.error();
    ExperimentRecord e;
    e.id = "bomb";
    e.name = "bomb";
    e.yaml = AliasBomb(500'000, 120'000 / 4);
    e.state = ExperimentState::kDone;
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
  }
  for (const char* output : {"table", "json"}) {
    auto [code, rss] =
        RunMeasured({Bin("codlctl"), "results", "--db", db, "bomb", "-o", output}, dir_ + "/out");
    const std::string out = ReadFile(dir_ + "/out");
    EXPECT_GE(code, 0) << "killed by a signal: " << out;
    EXPECT_NE(out.find("does not parse"), std::string::npos) << out;
    EXPECT_LT(rss, kRssBoundKiB) << out;
  }
}

TEST_F(YamlAliasesCli, TheControllerRefusesTheBombAndKeepsServing) {
  const std::string socket = dir_ + "/controller.sock";
  Process controller({Bin("codl-controller"), "--listen", "unix:" + socket, "--db", dir_ + "/c.db"},
                     dir_ + "/controller.log");
  ASSERT_TRUE(WaitUntil([&] { return access(socket.c_str(), F_OK) == 0; }, 30))
      << ReadFile(dir_ + "/controller.log");
  auto stub = v1::Controller::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  const std::string bomb = AliasBomb(500'000, 120'000);  // 980 kB
  ASSERT_LT(bomb.size(), yaml::kMaxDocumentBytes);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::SubmitExperimentRequest req;
    req.set_idempotency_key("bomb-" + std::to_string(i));
    req.set_yaml(bomb);
    req.set_source_path("bomb.yaml");
    v1::SubmitExperimentReply reply;
    grpc::Status s = stub->SubmitExperiment(&ctx, req, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("bomb.yaml:3:"), std::string::npos) << s.error_message();
  }
  grpc::ClientContext ctx;
  v1::ListAgentsReply agents;
  EXPECT_TRUE(stub->ListAgents(&ctx, v1::ListAgentsRequest(), &agents).ok()) << "still serving";
  EXPECT_TRUE(controller.Running()) << ReadFile(dir_ + "/controller.log");
  const std::string status = ReadFile("/proc/" + std::to_string(controller.pid()) + "/status");
  const size_t hwm = status.find("VmHWM:");
  ASSERT_NE(hwm, std::string::npos);
  EXPECT_LT(std::stol(status.substr(hwm + 6)), kRssBoundKiB) << status;
}

}  // namespace
}  // namespace codl
