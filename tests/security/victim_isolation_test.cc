// Issue "Security, third pass", item 4 (victim isolation), on a real root codl-agent started
// with --victim-uid-range: the victims of two experiments run at once as two uids and cannot
// signal, ptrace or read each other; a victim's environment is exactly the documented list;
// the working directory is checked as the victim. gRPC calls run in forked children, so this
// process never initialises gRPC before a fork (as in local_root_test.cc).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "codl/v1/agent.grpc.pb.h"
#include "lib/common/subprocess.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace codl::testing;

constexpr uid_t kLo = 61200, kHi = 61209;
// One lock directory for every agent these tests start, as agents on one host share theirs:
// ctest runs these tests side by side, and an agent takes a uid only when no other agent holds
// its lock (it kills what still runs as that uid first). With a directory per test, one test's
// agent killed another's running victim (SIGKILL, seen at ctest -j3).
constexpr const char* kLockDir = "/tmp/codl-test-victim-uids-61200";

// Agent.RunVictim (or EndExperiment when `command` is empty) over `address` from a forked
// child, which writes the serialized reply to `reply_file`. Returns the child.
Result<Subprocess> CallFromChild(const std::string& address, const std::string& experiment,
                                 const std::vector<std::string>& command,
                                 const std::string& reply_file, const std::string& workdir = "",
                                 const std::map<std::string, std::string>& env = {}) {
  return Subprocess::ForkCall(SpawnOptions{}, [=]() -> int {
    auto stub =
        v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(40));
    std::string bytes;
    grpc::Status s;
    if (command.empty()) {
      v1::EndExperimentRequest req;
      req.set_experiment_id(experiment);
      v1::EndExperimentReply reply;
      s = stub->EndExperiment(&ctx, req, &reply);
      reply.SerializeToString(&bytes);
    } else {
      v1::RunVictimRequest req;
      req.set_idempotency_key("k-" + std::to_string(getpid()));
      req.set_experiment_id(experiment);
      for (const auto& arg : command) req.mutable_victim()->add_command(arg);
      req.mutable_victim()->mutable_progress()->set_format(v1::VictimProgress::WALL);
      req.mutable_victim()->set_timeout_s(30);
      req.mutable_victim()->set_workdir(workdir);
      for (const auto& [k, v] : env) (*req.mutable_victim()->mutable_env())[k] = v;
      v1::RunVictimReply reply;
      s = stub->RunVictim(&ctx, req, &reply);
      reply.SerializeToString(&bytes);
    }
    std::ofstream(reply_file, std::ios::binary) << bytes;
    return s.error_code();
  });
}

template <class Reply>
Reply ReadReply(const std::string& path) {
  Reply r;
  r.ParseFromString(ReadFile(path));
  return r;
}

class VictimIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: victims switch to uids of the range";
    dir_ = MakeTempDir("codl-isolation");
    chmod(dir_.c_str(), 0711);
    out_ = dir_ + "/out";  // where victims write what they saw (world-writable)
    mkdir(out_.c_str(), 0777);
    chmod(out_.c_str(), 0777);
    mkdir((dir_ + "/run").c_str(), 0700);
    socket_ = dir_ + "/run/agent.sock";
    agent_ = Process(
        {Bin("codl-agent"), "--listen", "unix:" + socket_, "--controller",
         "unix:" + dir_ + "/run/no-controller.sock", "--id", "isolation-test", "--scratch-root",
         out_, "--victim-uid-range", std::to_string(kLo) + "-" + std::to_string(kHi),
         "--victim-uid-lock-dir", kLockDir, "--victim-env-keep", "CODL_TEST_KEPT"},
        dir_ + "/agent.log", "",
        {{"HTTPS_PROXY", "http://proxy.example:3128"},
         {"CODL_TEST_KEPT", "kept"},
         {"CODL_TEST_AGENT_ONLY", "agent-only"}});
    ASSERT_TRUE(WaitUntil([&] { return access(socket_.c_str(), F_OK) == 0; }, 20))
        << ReadFile(dir_ + "/agent.log");
  }
  void TearDown() override {
    agent_ = Process();
    if (!dir_.empty()) RemoveTree(dir_);
  }
  std::string Address() const { return "unix:" + socket_; }
  std::string dir_, out_, socket_;
  Process agent_;
};

// Victim A writes a private file in its HOME, says where it is and waits; victim B, of another
// experiment, tries to signal A, ptrace it, read its environment and its file.
constexpr const char* kVictimA = R"(
import os, sys, time
out = sys.argv[1]
with open(os.path.join(os.environ['HOME'], 'secret'), 'w') as f: f.write('mine')
with open(os.path.join(out, 'a.tmp'), 'w') as f:
    f.write('%d %d %s' % (os.getpid(), os.getuid(), os.environ['HOME']))
os.rename(os.path.join(out, 'a.tmp'), os.path.join(out, 'a.info'))
for _ in range(300):
    if os.path.exists(os.path.join(out, 'b.done')): break
    time.sleep(0.05)
)";
constexpr const char* kVictimB = R"(
import ctypes, json, os, signal, sys, time
out = sys.argv[1]
for _ in range(300):
    if os.path.exists(os.path.join(out, 'a.info')): break
    time.sleep(0.05)
pid, uid, home = open(os.path.join(out, 'a.info')).read().split(' ', 2)
pid = int(pid)
seen = {'uid': os.getuid(), 'a_uid': int(uid)}
def attempt(name, f):
    try:
        f(); seen[name] = 'allowed'
    except PermissionError:
        seen[name] = 'denied'
    except Exception as e:
        seen[name] = 'error: %r' % e
attempt('signal', lambda: os.kill(pid, 0))
attempt('environ', lambda: open('/proc/%d/environ' % pid).read())
attempt('mem', lambda: open('/proc/%d/mem' % pid, 'rb').read(1))
attempt('home', lambda: os.listdir(home))
attempt('secret', lambda: open(os.path.join(home, 'secret')).read())
libc = ctypes.CDLL(None, use_errno=True)
rc = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
seen['ptrace'] = 'allowed' if rc == 0 else 'denied' if ctypes.get_errno() == 1 else 'errno %d' % ctypes.get_errno()
with open(os.path.join(out, 'b.json'), 'w') as f: json.dump(seen, f)
open(os.path.join(out, 'b.done'), 'w').close()
)";

TEST_F(VictimIsolation, VictimsOfTwoExperimentsCannotTouchEachOther) {
  auto a = CallFromChild(Address(), "exp-a", {"/usr/bin/python3", "-c", kVictimA, out_},
                         dir_ + "/a.reply");
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(WaitUntil([&] { return access((out_ + "/a.info").c_str(), F_OK) == 0; }, 30))
      << ReadFile(dir_ + "/agent.log");
  auto b = CallFromChild(Address(), "exp-b", {"/usr/bin/python3", "-c", kVictimB, out_},
                         dir_ + "/b.reply");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->Wait().CodeOrNegativeSignal(), 0);
  EXPECT_EQ(a->Wait().CodeOrNegativeSignal(), 0);
  for (const char* r : {"/a.reply", "/b.reply"}) {
    auto reply = ReadReply<v1::RunVictimReply>(dir_ + r);
    EXPECT_TRUE(reply.ok()) << r << ": " << reply.error() << " " << reply.stderr_tail();
  }
  const auto seen = nlohmann::json::parse(ReadFile(out_ + "/b.json"));
  const uid_t ua = seen["a_uid"], ub = seen["uid"];
  EXPECT_NE(ua, ub) << "two experiments, two uids";
  EXPECT_TRUE(ua >= kLo && ua <= kHi && ub >= kLo && ub <= kHi) << seen.dump();
  for (const char* what : {"signal", "environ", "mem", "home", "secret", "ptrace"}) {
    EXPECT_EQ(seen[what], "denied") << what << ": " << seen.dump();
  }
}

TEST_F(VictimIsolation, TheEnvironmentIsExactlyTheDocumentedList) {
  const std::string script =
      "import json, os, sys\n"
      "h = os.environ['HOME']; st = os.stat(h)\n"
      "json.dump({'env': dict(os.environ), 'uid': os.getuid(), 'home_uid': st.st_uid,"
      " 'home_mode': st.st_mode & 0o777}, open(sys.argv[1], 'w'))\n";
  auto c = CallFromChild(Address(), "exp-env", {"/usr/bin/python3", "-c", script, out_ + "/env"},
                         dir_ + "/env.reply", "", {{"FROM_EXPERIMENT", "yes"}});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->Wait().CodeOrNegativeSignal(), 0);
  auto reply = ReadReply<v1::RunVictimReply>(dir_ + "/env.reply");
  ASSERT_TRUE(reply.ok()) << reply.error() << " " << reply.stderr_tail();
  const auto seen = nlohmann::json::parse(ReadFile(out_ + "/env"));
  std::set<std::string> names;
  for (const auto& [k, v] : seen["env"].items()) names.insert(k);
  std::set<std::string> expected = {
      "PATH", "LANG", "HOME", "TMPDIR", "CODL_AGENT_CHILD", "CODL_TEST_KEPT", "FROM_EXPERIMENT"};
  if (names.count("PYTHONPATH")) expected.insert("PYTHONPATH");  // the build's codl package
  EXPECT_EQ(names, expected) << seen["env"].dump();
  EXPECT_EQ(seen["env"]["CODL_TEST_KEPT"], "kept");
  const std::string home = seen["env"]["HOME"];
  EXPECT_EQ(home.rfind(out_ + "/codl-homes/home-", 0), 0u) << home;
  EXPECT_EQ(seen["env"]["TMPDIR"], home);
  EXPECT_EQ(seen["home_uid"], seen["uid"]);
  EXPECT_EQ(seen["home_mode"], 0700);
  EXPECT_NE(access(home.c_str(), F_OK), 0) << "a trial's HOME is removed after it";
}

TEST_F(VictimIsolation, TheWorkdirIsCheckedAsTheVictimAndSaysNothingOfRootOnlyPaths) {
  const std::string secret_dir = dir_ + "/root-only";
  mkdir(secret_dir.c_str(), 0700);
  mkdir((secret_dir + "/exists").c_str(), 0755);
  std::string errors[2];
  int i = 0;
  for (const std::string sub : {"/exists", "/missing"}) {
    const std::string file = dir_ + "/wd" + std::to_string(i) + ".reply";
    auto c = CallFromChild(Address(), "exp-wd", {"/bin/true"}, file, secret_dir + sub);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->Wait().CodeOrNegativeSignal(), 0);
    auto reply = ReadReply<v1::RunVictimReply>(file);
    EXPECT_FALSE(reply.ok());
    std::string e = reply.error() + " | " + reply.stderr_tail();
    for (size_t at; (at = e.find(secret_dir + sub)) != std::string::npos;)
      e.replace(at, secret_dir.size() + sub.size(), "<dir>");
    errors[i++] = e;
  }
  for (const auto& e : errors) {
    EXPECT_THAT(e, HasSubstr("as the user it runs as: permission denied")) << e;
    EXPECT_THAT(e, Not(HasSubstr("does not exist"))) << e;
    EXPECT_THAT(e, Not(HasSubstr("no such"))) << e;
  }
  // Both answers are the same but for the path: the victim cannot tell which exists.
  EXPECT_EQ(errors[0], errors[1]);
}

TEST_F(VictimIsolation, EndExperimentReleasesItsUid) {
  const std::string script = "import os, sys; open(sys.argv[1], 'w').write(str(os.getuid()))";
  auto run = [&](const std::string& exp, const std::string& name) -> uid_t {
    auto c = CallFromChild(Address(), exp, {"/usr/bin/python3", "-c", script, out_ + "/" + name},
                           dir_ + "/" + name + ".reply");
    EXPECT_TRUE(c.ok());
    EXPECT_EQ(c->Wait().CodeOrNegativeSignal(), 0);
    return static_cast<uid_t>(std::stoul("0" + ReadFile(out_ + "/" + name)));
  };
  const uid_t first = run("exp-1", "u1");
  EXPECT_EQ(run("exp-1", "u1b"), first) << "the same experiment, the same uid";
  auto end = CallFromChild(Address(), "exp-1", {}, dir_ + "/end.reply");
  ASSERT_TRUE(end.ok());
  ASSERT_EQ(end->Wait().CodeOrNegativeSignal(), 0);
  EXPECT_TRUE(ReadReply<v1::EndExperimentReply>(dir_ + "/end.reply").released());
  const uid_t second = run("exp-2", "u2");
  EXPECT_NE(second, first) << "round robin: a released uid is not handed out next";
  EXPECT_TRUE(second >= kLo && second <= kHi);
  auto again = CallFromChild(Address(), "exp-1", {}, dir_ + "/end2.reply");
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->Wait().CodeOrNegativeSignal(), 0);
  EXPECT_FALSE(ReadReply<v1::EndExperimentReply>(dir_ + "/end2.reply").released());
}

}  // namespace
}  // namespace codl
