// No local root (docs/security.md): real codl-agent processes. An unprivileged local user
// cannot get a command run through the agent's unix socket (the directory is private, and a
// socket made reachable anyway is closed on by the peer-uid check); plaintext TCP needs
// --insecure; a victim runs as victim_user (nobody) and never sees the agent's CODL_TOKEN.
// gRPC calls run in forked children (dropping to `nobody` first where the test says so), so
// this process never initialises gRPC before a fork.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codl/v1/agent.grpc.pb.h"
#include "lib/common/subprocess.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace codl::testing;

struct User {
  uid_t uid;
  gid_t gid;
};

User Nobody() {
  const passwd* pw = getpwnam("nobody");
  return pw ? User{pw->pw_uid, pw->pw_gid} : User{65534, 65534};
}

// Agent.RunVictim(command) over `address` from a forked child, as `as` when given. Returns the
// gRPC status code (0: OK), or 100+ when the child could not drop privileges.
int RunVictimFromChild(const std::string& address, const std::vector<std::string>& command,
                       std::optional<User> as = std::nullopt) {
  auto child = Subprocess::ForkCall(SpawnOptions{}, [&]() -> int {
    if (as && (setgroups(0, nullptr) != 0 || setgid(as->gid) != 0 || setuid(as->uid) != 0)) {
      return 101;
    }
    auto stub =
        v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::RunVictimRequest req;
    req.set_idempotency_key("k-" + std::to_string(getpid()));
    for (const auto& arg : command) req.mutable_victim()->add_command(arg);
    req.mutable_victim()->mutable_progress()->set_format(v1::VictimProgress::WALL);
    req.mutable_victim()->set_timeout_s(10);
    v1::RunVictimReply reply;
    return stub->RunVictim(&ctx, req, &reply).error_code();
  });
  if (!child.ok()) return 102;
  return child->Wait().CodeOrNegativeSignal();
}

class AgentSocket : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the test switches to the user nobody";
    dir_ = MakeTempDir("codl-local-root");
    // nobody may pass through dir_ to out/ (world-writable), but not into run/ (the agent's).
    chmod(dir_.c_str(), 0711);
    out_ = dir_ + "/out";
    mkdir(out_.c_str(), 0777);
    chmod(out_.c_str(), 0777);
    socket_ = dir_ + "/run/agent.sock";
    agent_ = Process({Bin("codl-agent"), "--listen", "unix:" + socket_, "--controller",
                      "unix:" + dir_ + "/run/no-controller.sock", "--id", "local-root-test",
                      "--scratch-root", out_},
                     dir_ + "/agent.log", "", {{"CODL_TOKEN", "topsecret-agent-token"}});
    ASSERT_TRUE(WaitUntil([&] { return access(socket_.c_str(), F_OK) == 0; }, 20))
        << ReadFile(dir_ + "/agent.log");
  }
  void TearDown() override {
    agent_ = Process();
    if (!dir_.empty()) RemoveTree(dir_);
  }
  std::string dir_, out_, socket_;
  Process agent_;
};

TEST_F(AgentSocket, NobodyCannotRunACommandThroughIt) {
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the agent creates its socket directory private";
  const std::string pwned = out_ + "/pwned";
  EXPECT_EQ(RunVictimFromChild("unix:" + socket_, {"/usr/bin/touch", pwned}, Nobody()),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(access(pwned.c_str(), F_OK), 0);

  // Even with the directory and the socket opened up, the peer-uid check closes on nobody.
  chmod((dir_ + "/run").c_str(), 0711);
  chmod(socket_.c_str(), 0666);
  EXPECT_EQ(RunVictimFromChild("unix:" + socket_, {"/usr/bin/touch", pwned}, Nobody()),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(access(pwned.c_str(), F_OK), 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadFile(dir_ + "/agent.log")
                   .find("refused a connection from uid " + std::to_string(Nobody().uid)) !=
               std::string::npos;
      },
      5))
      << ReadFile(dir_ + "/agent.log");
}

TEST_F(AgentSocket, RootGetsInAndTheVictimRunsAsNobodyWithoutTheToken) {
  const std::string script = "env > " + out_ + "/env; id -u > " + out_ + "/uid";
  ASSERT_EQ(RunVictimFromChild("unix:" + socket_, {"/bin/sh", "-c", script}), 0)
      << ReadFile(dir_ + "/agent.log");
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(out_ + "/uid").empty(); }, 10));
  EXPECT_EQ(ReadFile(out_ + "/uid"), std::to_string(Nobody().uid) + "\n");
  const std::string env = ReadFile(out_ + "/env");
  EXPECT_THAT(env, HasSubstr("PATH="));
  EXPECT_THAT(env, Not(HasSubstr("topsecret")));
  EXPECT_THAT(env, Not(HasSubstr("CODL_TOKEN")));
}

// Without root too: no child started through lib/common/subprocess inherits CODL_TOKEN.
TEST(Secrets, ChildrenNeverInheritTheToken) {
  setenv("CODL_TOKEN", "topsecret-parent", 1);
  SpawnOptions o;
  o.argv = {"/usr/bin/env"};
  auto inherited = RunAndCapture(o, 10);
  o.env["CODL_TOKEN"] = "set-by-the-experiment";  // an explicit value is the caller's choice
  auto explicit_env = RunAndCapture(o, 10);
  unsetenv("CODL_TOKEN");
  ASSERT_TRUE(inherited.ok() && explicit_env.ok());
  EXPECT_THAT(inherited->out, HasSubstr("PATH="));
  EXPECT_THAT(inherited->out, Not(HasSubstr("CODL_TOKEN")));
  EXPECT_THAT(explicit_env->out, HasSubstr("CODL_TOKEN=set-by-the-experiment"));
  EXPECT_THAT(explicit_env->out, Not(HasSubstr("topsecret")));
  EXPECT_TRUE(IsSecretEnv("CODL_TOKEN"));
  EXPECT_FALSE(IsSecretEnv("CODL_SCRATCH_ROOTS"));
}

TEST(PlaintextTcp, AgentRefusedWithoutInsecureAndWarnedWithIt) {
  const std::string dir = MakeTempDir("codl-plaintext");
  auto r = RunCommand({Bin("codl-agent"), "--listen", "127.0.0.1:0", "--controller", "127.0.0.1:1",
                       "--scratch-root", dir},
                      20);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("refusing plaintext TCP on '127.0.0.1:0'"));
  {
    Process agent({Bin("codl-agent"), "--listen", "127.0.0.1:0", "--controller", "127.0.0.1:1",
                   "--scratch-root", dir, "--insecure"},
                  dir + "/agent.log");
    EXPECT_TRUE(WaitUntil(
        [&] { return ReadFile(dir + "/agent.log").find("listening on") != std::string::npos; }, 20))
        << ReadFile(dir + "/agent.log");
    EXPECT_THAT(ReadFile(dir + "/agent.log"), HasSubstr("--insecure: plaintext gRPC"));
  }
  r = RunCommand({Bin("codl-agent"), "--token", "s3cret", "--listen", "127.0.0.1:0"}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--token is removed"));
  RemoveTree(dir);
}

}  // namespace
}  // namespace codl
