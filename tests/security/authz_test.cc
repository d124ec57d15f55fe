// Authorization (docs/security.md): the per-method role table covers every RPC in the protos,
// identities parse strictly, tokens are matched by hash, and a real controller refuses what a
// caller's role does not allow — an agent cannot submit, a forged agent cannot register or
// heartbeat for another agent's id, a reader cannot submit, and nobody gets in without a token.
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "codl/v1/agent.grpc.pb.h"
#include "codl/v1/controller.grpc.pb.h"
#include "controller/controller.h"
#include "lib/rpc/authz.h"
#include "lib/rpc/unix_listener.h"

namespace codl::rpc {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> ProtoMethods() {
  // Referencing the generated services links their descriptors into the pool.
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  std::vector<std::string> methods;
  for (const char* name : {v1::Agent::service_full_name(), v1::Controller::service_full_name()}) {
    const auto* file = pool->FindServiceByName(name)->file();
    for (int s = 0; s < file->service_count(); ++s) {
      const auto* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        methods.push_back("/" + service->full_name() + "/" + service->method(m)->name());
      }
    }
  }
  return methods;
}

TEST(MethodTable, CoversEveryMethodOfEveryServiceAndNothingElse) {
  const auto methods = ProtoMethods();
  ASSERT_GE(methods.size(), 18u);
  for (const auto& m : methods) {
    EXPECT_EQ(MethodTable().count(m), 1u) << m << " has no authorization rule";
  }
  for (const auto& [m, roles] : MethodTable()) {
    EXPECT_NE(std::find(methods.begin(), methods.end(), m), methods.end()) << "stale rule " << m;
    EXPECT_FALSE(roles.empty()) << m;
  }
}

TEST(MethodTable, RolesGetOnlyTheirJob) {
  const Identity controller{Role::kController, ""}, agent{Role::kAgent, "n1"},
      reader{Role::kUserRead, "r"}, submitter{Role::kUserSubmit, "s"}, admin{Role::kAdmin, ""};
  // Only the controller (and admins) may make an agent run anything.
  EXPECT_TRUE(Authorize("/codl.v1.Agent/RunVictim", controller).ok());
  EXPECT_TRUE(Authorize("/codl.v1.Agent/RunVictim", admin).ok());
  for (const auto& who : {agent, reader, submitter}) {
    Status s = Authorize("/codl.v1.Agent/RunVictim", who);
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << who.ToString();
    EXPECT_EQ(Authorize("/codl.v1.Agent/StartAntagonist", who).code(),
              StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(Authorize("/codl.v1.Controller/RegisterAgent", agent).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/RegisterAgent", submitter).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/Heartbeat", controller).ok());
  EXPECT_TRUE(Authorize("/codl.v1.Controller/SubmitExperiment", submitter).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/SubmitExperiment", agent).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/SubmitExperiment", reader).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/CalibrateNode", reader).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/CancelExperiment", agent).ok());
  EXPECT_TRUE(Authorize("/codl.v1.Controller/GetResults", reader).ok());
  EXPECT_FALSE(Authorize("/codl.v1.Controller/GetResults", agent).ok());
  EXPECT_THAT(Authorize("/codl.v1.Agent/NoSuchMethod", admin).error(),
              HasSubstr("no authorization rule"));
}

TEST(Identity, UriSansParseStrictly) {
  auto a = IdentityFromUri("codl://agent/gpu-node-1.rack2");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->role, Role::kAgent);
  EXPECT_EQ(a->id, "gpu-node-1.rack2");
  EXPECT_EQ(IdentityFromUri("codl://controller")->role, Role::kController);
  EXPECT_EQ(IdentityFromUri("codl://user-submit/alice")->role, Role::kUserSubmit);
  EXPECT_EQ(IdentityFromUri("codl://admin")->role, Role::kAdmin);
  EXPECT_EQ(IdentityFromUri("codl://agent/*")->id, kAnyAgent);  // a shared node-pool cert
  for (const char* bad :
       {"codl://agent", "codl://agent/", "codl://agent/a/b", "codl://root/x", "https://agent/x",
        "codl://controller/x", "codl://user-read/a b", "codl://user-read", "codl://user-read/*"}) {
    EXPECT_FALSE(IdentityFromUri(bad)) << bad;
  }
}

TEST(Tokens, MatchedByHashOnly) {
  const std::string file = "# role id sha256\n\ncontroller - " + Sha256Hex("ctl-token") +
                           "\nagent n1 " + Sha256Hex("agent-token") + "\nuser-read bob " +
                           Sha256Hex("bob-token") + "\n";
  auto t = TokenTable::Parse(file, "tokens");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->size(), 3u);
  EXPECT_EQ(t->Find("ctl-token")->role, Role::kController);
  EXPECT_EQ(t->Find("agent-token")->id, "n1");
  EXPECT_EQ(t->Find("bob-token")->role, Role::kUserRead);
  EXPECT_FALSE(t->Find("agent-token "));
  EXPECT_FALSE(t->Find(""));
  EXPECT_FALSE(t->Find(Sha256Hex("agent-token")));  // the hash itself is not a token
  EXPECT_EQ(Sha256Hex("s3cret"),
            "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0");

  EXPECT_THAT(TokenTable::Parse("agent n1\n", "f").error(), HasSubstr("f:1: expected"));
  EXPECT_THAT(TokenTable::Parse("boss x " + Sha256Hex("x"), "f").error(),
              HasSubstr("unknown role 'boss'"));
  EXPECT_THAT(TokenTable::Parse("agent - " + Sha256Hex("x"), "f").error(),
              HasSubstr("needs an id"));
  EXPECT_THAT(TokenTable::Parse("agent n1 abc", "f").error(), HasSubstr("64 hex digits"));
}

TEST(UnixSockets, DirectoryMustBePrivateAndOnlyRootOrSelfGetIn) {
  std::string dir = std::filesystem::temp_directory_path() / "codl-authz-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  EXPECT_TRUE(EnsurePrivateDirectory(dir).ok());
  EXPECT_TRUE(EnsurePrivateDirectory(dir + "/new").ok());
  EXPECT_EQ(std::filesystem::status(dir + "/new").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  chmod(dir.c_str(), 0755);
  EXPECT_THAT(EnsurePrivateDirectory(dir).error(), HasSubstr("open to group or others"));
  EXPECT_FALSE(UnixListener::Open(dir + "/x.sock").ok());
  std::filesystem::remove_all(dir);

  EXPECT_TRUE(AdmitLocalPeer(0, 1000));
  EXPECT_TRUE(AdmitLocalPeer(1000, 1000));
  EXPECT_FALSE(AdmitLocalPeer(1001, 1000));
  EXPECT_FALSE(AdmitLocalPeer(65534, 0));
}

// A live agent's id is not taken by a second registration from another session and address (a
// cloned host presenting the same credentials); a restarted agent takes it over once the first
// has been silent past the liveness timeout. `reg(session, address)` registers the id.
void ExpectLiveIdHeldThenTakenOver(
    const std::function<grpc::Status(const std::string&, const std::string&)>& reg,
    const std::string& live_session) {
  ASSERT_TRUE(reg(live_session, "127.0.0.1:1").ok());
  const grpc::Status second = reg("clone", "127.0.0.1:2");
  EXPECT_EQ(second.error_code(), grpc::StatusCode::ALREADY_EXISTS) << second.error_message();
  EXPECT_THAT(second.error_message(),
              ::testing::HasSubstr("is taken by a live agent at 127.0.0.1:1"));
  bool taken = false;
  for (int i = 0; i < 100 && !taken; ++i) {  // the liveness timeout: 3 heartbeats, at least 2 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    taken = reg("clone", "127.0.0.1:2").ok();
  }
  EXPECT_TRUE(taken) << "a restarted agent did not take the id over";
}

// A real controller on plaintext loopback (--insecure) with a tokens file.
class ControllerAuthz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / "codl-authz-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    auto tokens = TokenTable::Parse("agent a1 " + Sha256Hex("a1-token") + "\nuser-read r " +
                                        Sha256Hex("read-token") + "\nuser-submit s " +
                                        Sha256Hex("submit-token") + "\n",
                                    "tokens");
    ASSERT_TRUE(tokens.ok());
    controller::ControllerOptions o;
    o.listen = "127.0.0.1:0";
    o.db_path = dir_ + "/c.db";
    o.insecure = true;
    o.tokens = std::make_shared<const TokenTable>(std::move(*tokens));
    controller_ = std::make_unique<controller::Controller>(o);
    ASSERT_TRUE(controller_->Start().ok());
    stub_ = v1::Controller::NewStub(
        grpc::CreateChannel(controller_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    return ctx;
  }
  grpc::StatusCode Register(const std::string& token, const std::string& id) {
    v1::RegisterAgentRequest req;
    req.mutable_agent()->set_agent_id(id);
    req.mutable_agent()->set_address("127.0.0.1:1");
    v1::RegisterAgentReply reply;
    return stub_->RegisterAgent(As(token).get(), req, &reply).error_code();
  }
  grpc::StatusCode Heartbeat(const std::string& token, const std::string& id) {
    v1::HeartbeatRequest req;
    req.set_agent_id(id);
    v1::HeartbeatReply reply;
    return stub_->Heartbeat(As(token).get(), req, &reply).error_code();
  }
  grpc::StatusCode Submit(const std::string& token) {
    v1::SubmitExperimentRequest req;
    req.set_idempotency_key("k-" + token);
    req.set_yaml("not: an experiment\n");
    v1::SubmitExperimentReply reply;
    return stub_->SubmitExperiment(As(token).get(), req, &reply).error_code();
  }
  grpc::StatusCode List(const std::string& token) {
    v1::ListAgentsReply reply;
    return stub_->ListAgents(As(token).get(), v1::ListAgentsRequest(), &reply).error_code();
  }

  std::string dir_;
  std::unique_ptr<controller::Controller> controller_;
  std::unique_ptr<v1::Controller::Stub> stub_;
};

TEST_F(ControllerAuthz, AgentTokenCannotSubmitOrReadAndOnlyActsForItself) {
  EXPECT_EQ(Submit("a1-token"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(List("a1-token"), grpc::StatusCode::PERMISSION_DENIED);
  v1::CalibrateNodeRequest cal;
  cal.set_agent_id("a1");
  v1::CalibrateNodeReply cal_reply;
  EXPECT_EQ(stub_->CalibrateNode(As("a1-token").get(), cal, &cal_reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // A forged identity: a1's token claiming to be a2.
  EXPECT_EQ(Register("a1-token", "a2"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Heartbeat("a1-token", "a2"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Register("a1-token", "a1"), grpc::StatusCode::OK);
  EXPECT_EQ(Heartbeat("a1-token", "a1"), grpc::StatusCode::OK);
}

// Token mode: the same agent token in a second process does not take a live agent's id.
TEST_F(ControllerAuthz, ALiveAgentsIdIsNotTakenWithItsOwnToken) {
  ExpectLiveIdHeldThenTakenOver(
      [&](const std::string& session, const std::string& address) {
        v1::RegisterAgentRequest req;
        req.mutable_agent()->set_agent_id("a1");
        req.mutable_agent()->set_address(address);
        req.set_session_id(session);
        v1::RegisterAgentReply reply;
        return stub_->RegisterAgent(As("a1-token").get(), req, &reply);
      },
      "s1");
}

TEST_F(ControllerAuthz, UsersGetTheirRoleAndStrangersNothing) {
  EXPECT_EQ(List("read-token"), grpc::StatusCode::OK);
  EXPECT_EQ(Submit("read-token"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Register("submit-token", "s"), grpc::StatusCode::PERMISSION_DENIED);
  // Past the authorizer: the handler parses (and rejects) the YAML.
  EXPECT_EQ(Submit("submit-token"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(List(""), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(List("guess"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register("", "a1"), grpc::StatusCode::UNAUTHENTICATED);
}

// mTLS with certificates from scripts/issue-certs.sh: identities come from the URI SANs.
TEST(CertificateAuthz, AgentCertificateIsBoundToItsRoleAndId) {
  std::string dir = std::filesystem::temp_directory_path() / "codl-certs-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string script = std::string(CODL_TEST_SOURCE_DIR) + "/scripts/issue-certs.sh";
  for (const std::string args :
       {"ca", "controller 127.0.0.1", "agent n1 127.0.0.1", "user-submit alice"}) {
    ASSERT_EQ(std::system((script + " " + dir + " " + args + " >/dev/null").c_str()), 0) << args;
  }
  controller::ControllerOptions o;
  o.listen = "127.0.0.1:0";
  o.db_path = dir + "/c.db";
  o.tls = TlsFiles{dir + "/ca.pem", dir + "/controller.pem", dir + "/controller.key"};
  controller::Controller c(o);
  ASSERT_TRUE(c.Start().ok());
  auto stub_for = [&](const std::string& who) {
    auto ch = MakeChannel(Endpoint{
        c.address(), {dir + "/ca.pem", dir + "/" + who + ".pem", dir + "/" + who + ".key"}});
    return v1::Controller::NewStub(*ch);
  };
  auto ctx = [] {
    auto x = std::make_unique<grpc::ClientContext>();
    x->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return x;
  };
  auto agent = stub_for("agent-n1");
  auto user = stub_for("user-submit-alice");
  v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_address("127.0.0.1:1");
  v1::RegisterAgentReply reg_reply;
  reg.mutable_agent()->set_agent_id("n2");
  EXPECT_EQ(agent->RegisterAgent(ctx().get(), reg, &reg_reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  reg.mutable_agent()->set_agent_id("n1");
  EXPECT_EQ(agent->RegisterAgent(ctx().get(), reg, &reg_reply).error_code(), grpc::StatusCode::OK);
  v1::SubmitExperimentRequest submit;
  submit.set_yaml("x: 1\n");
  v1::SubmitExperimentReply submit_reply;
  EXPECT_EQ(agent->SubmitExperiment(ctx().get(), submit, &submit_reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(user->SubmitExperiment(ctx().get(), submit, &submit_reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // authorized; the YAML is not an experiment
  EXPECT_EQ(user->RegisterAgent(ctx().get(), reg, &reg_reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // n1's certificate on a cloned host does not take the live n1's id (registered above, no
  // session, at 127.0.0.1:1).
  ExpectLiveIdHeldThenTakenOver(
      [&](const std::string& session, const std::string& address) {
        v1::RegisterAgentRequest r;
        r.mutable_agent()->set_agent_id("n1");
        r.mutable_agent()->set_address(address);
        r.set_session_id(session);
        v1::RegisterAgentReply reply;
        return agent->RegisterAgent(ctx().get(), r, &reply);
      },
      "");
  c.Shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace codl::rpc
