// Issue 48, item 4 (controller/ownership.h): experiments belong to their submitter. A second
// user-submit caller cancelled and resumed another's experiment by id, and `cancel latest` hit
// whoever had submitted last. Now the controller stores who submitted each experiment; cancel
// and resume of another's need admin; "latest" is the caller's own; status and results show
// the submitter; a store from before (no submitter) leaves old experiments to admins.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "controller/ownership.h"
#include "lib/common/subprocess.h"
#include "lib/store/store.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using namespace codl::testing;
using controller::Access;
using controller::Caller;
using controller::MayChange;
using controller::ResolveExperimentFor;

ExperimentRecord Experiment(const std::string& id, const std::string& submitter, int64_t at) {
  ExperimentRecord e;
  e.id = id;
  e.name = id;
  e.state = ExperimentState::kFailed;
  e.submitter = submitter;
  e.created_unix_ms = at;
  return e;
}

TEST(Ownership, SameSubmitterIsTheSameNameWhateverTheRole) {
  EXPECT_TRUE(SameSubmitter("user-submit/alice", "admin/alice"));
  EXPECT_FALSE(SameSubmitter("user-submit/alice", "user-submit/bob"));
  EXPECT_TRUE(SameSubmitter("admin", "admin")) << "an unnamed caller matches its own text";
  EXPECT_FALSE(SameSubmitter("admin", "admin/root"));
  EXPECT_FALSE(SameSubmitter("", "")) << "unknown matches nobody";
}

class OwnershipStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("codl-ownership");
    auto s = store::Store::Open(dir_ + "/r.db");
    ASSERT_TRUE(s.ok()) << s.error();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->CreateExperiment(Experiment("a1", "user-submit/alice", 1)).ok());
    ASSERT_TRUE(store_->CreateExperiment(Experiment("b1", "user-submit/bob", 2)).ok());
    ASSERT_TRUE(store_->CreateExperiment(Experiment("a2", "user-submit/alice", 3)).ok());
    ASSERT_TRUE(store_->CreateExperiment(Experiment("b2", "user-submit/bob", 4)).ok());
  }
  void TearDown() override {
    store_.reset();
    RemoveTree(dir_);
  }
  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(OwnershipStore, LatestIsTheCallersOwn) {
  const Caller alice{"user-submit/alice", false}, carol{"user-submit/carol", false};
  EXPECT_EQ(ResolveExperimentFor(*store_, alice, "latest", Access::kChange).value(), "a2");
  EXPECT_EQ(ResolveExperimentFor(*store_, alice, "", Access::kRead).value(), "a2");
  EXPECT_EQ(ResolveExperimentFor(*store_, alice, "b1", Access::kChange).value(), "b1")
      << "an id is itself (MayChange decides)";
  auto none = ResolveExperimentFor(*store_, carol, "latest", Access::kChange);
  ASSERT_FALSE(none.ok()) << "carol's `cancel latest` must not reach bob's b2";
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.error().find("user-submit/carol has submitted no experiment"), std::string::npos)
      << none.error();
  EXPECT_EQ(ResolveExperimentFor(*store_, carol, "latest", Access::kRead).value(), "latest")
      << "reading: the newest of all";
  EXPECT_EQ(
      ResolveExperimentFor(*store_, Caller{"admin/root", true}, "latest", Access::kChange).value(),
      "latest");
}

TEST_F(OwnershipStore, OnlyTheSubmitterOrAnAdminMayChangeIt) {
  auto b1 = store_->GetExperiment("b1");
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(b1->submitter, "user-submit/bob") << "stored and read back";
  EXPECT_TRUE(MayChange(Caller{"user-submit/bob", false}, *b1, "cancel").ok());
  EXPECT_TRUE(MayChange(Caller{"admin/bob", true}, *b1, "cancel").ok());
  EXPECT_TRUE(MayChange(Caller{"admin/ops", true}, *b1, "resume").ok());
  Status s = MayChange(Caller{"user-submit/alice", false}, *b1, "resume");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "user-submit/alice may not resume experiment b1: it was submitted by "
            "user-submit/bob; only its submitter or an admin may");
}

TEST(OwnershipMigration, ExperimentsStoredBeforeSubmittersAreAdminsOnly) {
  const std::string dir = MakeTempDir("codl-ownership-migration");
  const std::string db = dir + "/r.db";
  {
    auto v16 = store::Store::OpenAtSchemaVersionForTesting(db, 16);
    ASSERT_TRUE(v16.ok()) << v16.error();
    ASSERT_TRUE((*v16)->CreateExperiment(Experiment("old", "ignored at v16", 1)).ok());
  }
  auto store = store::Store::Open(db);
  ASSERT_TRUE(store.ok()) << store.error();
  auto old = (*store)->GetExperiment("old");
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_EQ(old->submitter, "");
  Status s = MayChange(Caller{"user-submit/alice", false}, *old, "cancel");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("its submitter is unknown"), std::string::npos) << s.message();
  EXPECT_TRUE(MayChange(Caller{"admin", true}, *old, "cancel").ok());
  RemoveTree(dir);
}

// The attack of the issue against a real controller on a unix socket: alice (uid daemon) and
// bob (uid bin) are user-submit callers, nobody a user-read one; each runs codlctl as itself.
class OwnershipCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the test runs codlctl as other uids";
    dir_ = MakeTempDir("codl-ownership-cli");
    chmod(dir_.c_str(), 0755);
    socket_ = dir_ + "/run/controller.sock";
    WriteFile(dir_ + "/exp.yaml",
              "name: owned\nvictim:\n  command: [sleep, '1']\n  progress: {format: wall}\n"
              "  nodes: {hosts: [no-such-node]}\n");
    chmod((dir_ + "/exp.yaml").c_str(), 0644);
    // A copy every uid may run (the build tree may lie under a private home).
    codlctl_ = dir_ + "/codlctl";
    ASSERT_EQ(RunCommand({"/bin/cp", Bin("codlctl"), codlctl_}).exit_code, 0);
    chmod(codlctl_.c_str(), 0755);
    controller_ = Process({Bin("codl-controller"), "--listen", "unix:" + socket_, "--db",
                           dir_ + "/c.db", "--unix-role", "user-submit=user:daemon", "--unix-role",
                           "user-submit=user:bin", "--unix-role", "user-read=user:nobody"},
                          dir_ + "/controller.log");
    ASSERT_TRUE(WaitUntil([&] { return access(socket_.c_str(), F_OK) == 0; }, 30)) << Log();
  }
  void TearDown() override {
    controller_ = Process();
    if (!dir_.empty()) RemoveTree(dir_);
  }
  std::string Log() const { return ReadFile(dir_ + "/controller.log"); }
  // codlctl ARGS as `user` (empty: root, an admin); exit code and stdout + stderr.
  std::pair<int, std::string> Codlctl(const std::string& user,
                                      const std::vector<std::string>& args) {
    SpawnOptions o;
    o.argv = {codlctl_, "--controller", "unix:" + socket_};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.out = Stdio::Pipe();
    o.err = Stdio::Pipe();
    o.env["HOME"] = dir_;
    if (!user.empty()) {
      const uid_t uid = user == "daemon" ? 1 : user == "bin" ? 2 : 65534;
      o.run_as = RunAs{uid, uid, {}, user};
    }
    auto child = Subprocess::Spawn(o);
    if (!child.ok()) return {-1, child.error()};
    CapturedRun run = CaptureOutput(*child, 60);
    return {run.status.CodeOrNegativeSignal(), run.out + run.err};
  }
  std::string dir_, socket_, codlctl_;
  Process controller_;
};

TEST_F(OwnershipCli, AnotherSubmitterMayNotCancelOrResumeAndLatestIsOnesOwn) {
  auto [sub_rc, sub_out] = Codlctl("daemon", {"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub_rc, 0) << sub_out << Log();
  const std::string id = Lines(sub_out).at(0);
  // It fails at once (no such node), which leaves it resumable: the state the attack needs.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Codlctl("", {"status", id}).second.find("failed") != std::string::npos;
      },
      30))
      << Codlctl("", {"status", id}).second;
  auto [status_rc, status] = Codlctl("nobody", {"status", id, "-o", "json"});
  EXPECT_EQ(status_rc, 0) << status;
  EXPECT_NE(status.find("\"submitter\":\"user-submit/daemon\""), std::string::npos) << status;

  for (const char* verb : {"cancel", "resume"}) {
    auto [rc, out] = Codlctl("bin", {verb, id});
    EXPECT_NE(rc, 0) << verb << ": " << out;
    EXPECT_NE(out.find("user-submit/bin may not " + std::string(verb) + " experiment " + id),
              std::string::npos)
        << out;
  }
  auto [latest_rc, latest] = Codlctl("bin", {"cancel", "latest"});
  EXPECT_NE(latest_rc, 0) << latest;
  EXPECT_NE(latest.find("user-submit/bin has submitted no experiment"), std::string::npos)
      << latest;
  auto [read_rc, read] = Codlctl("nobody", {"cancel", id});
  EXPECT_NE(read_rc, 0) << "user-read may not cancel at all: " << read;

  // The submitter and an admin may; each change is logged with its caller.
  auto [own_rc, own] = Codlctl("daemon", {"cancel", "latest"});
  EXPECT_EQ(own_rc, 0) << own;
  auto [admin_rc, admin] = Codlctl("", {"cancel", id});
  EXPECT_EQ(admin_rc, 0) << admin;
  const std::string log = Log();
  EXPECT_NE(log.find("queued by user-submit/daemon"), std::string::npos) << log;
  EXPECT_NE(log.find("cancel requested by user-submit/daemon"), std::string::npos) << log;
  EXPECT_NE(log.find("cancel requested by admin/root"), std::string::npos) << log;
  EXPECT_NE(log.find("refused: user-submit/bin may not cancel"), std::string::npos) << log;
}

}  // namespace
}  // namespace codl
