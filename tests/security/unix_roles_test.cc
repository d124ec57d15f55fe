// Unix-socket callers by uid (issue 12; lib/rpc/local_roles.h): a real codl-controller on a unix
// socket with --unix-role grants; gRPC calls from forked children that drop to real
// unprivileged uids (nobody; daemon, with and without a granted supplementary group). This
// process never initialises gRPC before a fork.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <vector>

#include "codl/v1/controller.grpc.pb.h"
#include "lib/common/subprocess.h"
#include "lib/daemon/daemon_config.h"
#include "lib/rpc/local_roles.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using namespace codl::testing;

constexpr gid_t kSubmitGroup = 4242;  // granted user-submit below; nobody's groups lack it

struct User {
  uid_t uid;
  gid_t gid;
  std::vector<gid_t> groups;
};

User Named(const char* name, uid_t fallback) {
  const passwd* pw = getpwnam(name);
  return pw ? User{pw->pw_uid, pw->pw_gid, {}} : User{fallback, fallback, {}};
}

// `call(stub)` from a child running as `as`; its gRPC status code, or 100+ when the child could
// not drop privileges.
int CallAs(const std::string& address, const User& as,
           const std::function<grpc::Status(v1::Controller::Stub&, grpc::ClientContext&)>& call) {
  auto child = Subprocess::ForkCall(SpawnOptions{}, [&]() -> int {
    if (setgroups(as.groups.size(), as.groups.data()) != 0 || setgid(as.gid) != 0 ||
        setuid(as.uid) != 0) {
      return 101;
    }
    auto stub =
        v1::Controller::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return call(*stub, ctx).error_code();
  });
  if (!child.ok()) return 102;
  return child->Wait().CodeOrNegativeSignal();
}

grpc::Status List(v1::Controller::Stub& s, grpc::ClientContext& c) {
  v1::ListAgentsReply reply;
  return s.ListAgents(&c, v1::ListAgentsRequest(), &reply);
}

grpc::Status Submit(v1::Controller::Stub& s, grpc::ClientContext& c) {
  v1::SubmitExperimentRequest req;
  req.set_idempotency_key("k-" + std::to_string(getpid()));
  req.set_yaml("not: an experiment\n");
  v1::SubmitExperimentReply reply;
  return s.SubmitExperiment(&c, req, &reply);
}

class ControllerUnixRoles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the test switches to unprivileged uids";
    dir_ = MakeTempDir("codl-unix-roles");
    chmod(dir_.c_str(), 0711);
    socket_ = dir_ + "/run/controller.sock";
    controller_ = Process({Bin("codl-controller"), "--listen", "unix:" + socket_, "--db",
                           dir_ + "/c.db", "--unix-role", "user-read=user:nobody", "--unix-role",
                           "user-submit=gid:" + std::to_string(kSubmitGroup)},
                          dir_ + "/controller.log");
    ASSERT_TRUE(WaitUntil([&] { return access(socket_.c_str(), F_OK) == 0; }, 20))
        << ReadFile(dir_ + "/controller.log");
  }
  void TearDown() override {
    controller_ = Process();
    if (!dir_.empty()) RemoveTree(dir_);
  }
  std::string address() const { return "unix:" + socket_; }
  std::string dir_, socket_;
  Process controller_;
};

TEST_F(ControllerUnixRoles, AGrantedUserGetsItsRoleAndNoMore) {
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u) << "others may enter, not list or write";
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  const User nobody = Named("nobody", 65534);
  EXPECT_EQ(CallAs(address(), nobody, List), grpc::StatusCode::OK)
      << ReadFile(dir_ + "/controller.log");
  EXPECT_EQ(CallAs(address(), nobody, Submit), grpc::StatusCode::PERMISSION_DENIED)
      << "user-read may not submit";
}

TEST_F(ControllerUnixRoles, AGrantedGroupCountsAndEveryoneElseIsClosedOn) {
  User daemon_user = Named("daemon", 1);
  EXPECT_EQ(CallAs(address(), daemon_user, List), grpc::StatusCode::UNAVAILABLE)
      << "no role: the connection is closed before any gRPC";
  daemon_user.groups = {kSubmitGroup};
  // Past the role check, the handler parses (and rejects) the YAML.
  EXPECT_EQ(CallAs(address(), daemon_user, Submit), grpc::StatusCode::INVALID_ARGUMENT)
      << ReadFile(dir_ + "/controller.log");
  EXPECT_EQ(CallAs(address(), daemon_user, List), grpc::StatusCode::OK);
  EXPECT_NE(ReadFile(dir_ + "/controller.log").find("(no unix role)"), std::string::npos);
}

TEST(LocalRoles, ParseAndRank) {
  auto roles = rpc::LocalRoles::Parse(
      {"user-read=uid:1000", "user-submit=gid:50", "user-read=gid:50", "admin=uid:1001"});
  ASSERT_TRUE(roles.ok()) << roles.error();
  EXPECT_EQ(roles->RoleOf(0, {}, 999), rpc::Role::kAdmin) << "root";
  EXPECT_EQ(roles->RoleOf(999, {}, 999), rpc::Role::kAdmin) << "the daemon's own uid";
  EXPECT_EQ(roles->RoleOf(1000, {}, 999), rpc::Role::kUserRead);
  EXPECT_EQ(roles->RoleOf(1000, {7, 50}, 999), rpc::Role::kUserSubmit) << "the highest grant";
  EXPECT_EQ(roles->RoleOf(1001, {}, 999), rpc::Role::kAdmin);
  EXPECT_FALSE(roles->RoleOf(1002, {7}, 999).has_value());
  EXPECT_TRUE(roles->GrantsOthers());
  EXPECT_FALSE(rpc::LocalRoles::Parse({}).value().GrantsOthers());
  for (const char* bad : {"user-read", "agent=uid:1", "controller=uid:1", "user-read=uid:x",
                          "user-read=1000", "user-read=user:no-such-user-codl"}) {
    EXPECT_FALSE(rpc::LocalRoles::Parse({bad}).ok()) << bad;
  }
}

TEST(LocalRoles, ConfigKeyInBothDaemons) {
  auto c = daemon::ParseControllerConfig("unix_roles: [user-read=group:codl, user-submit=uid:7]\n",
                                         "controller.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->unix_roles, (std::vector<std::string>{"user-read=group:codl", "user-submit=uid:7"}));
  auto a = daemon::ParseAgentConfig("unix_roles: [admin=user:root]\n", "agent.yaml");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->unix_roles, (std::vector<std::string>{"admin=user:root"}));
  auto bad = daemon::ParseAgentConfig("unix_roles: [alice]\n", "agent.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("agent.yaml:1:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("unix_roles"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace codl
