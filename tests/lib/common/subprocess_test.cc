#include "lib/common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace codl {
namespace {

SpawnOptions Argv(std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  return o;
}

SpawnOptions Sh(const std::string& script) { return Argv({"/bin/sh", "-c", script}); }

std::string TempDir() {
  std::string t = ::testing::TempDir() + "codl-subprocess-XXXXXX";
  EXPECT_NE(mkdtemp(t.data()), nullptr);
  return t;
}

// Running (not gone, not a zombie nobody reaped: in a container, pid 1 may never reap).
bool Running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// SpawnOptions::extra_out_fd: a further pipe at a chosen descriptor (the agent's progress
// channel), open in the child beside 0-2 and nothing else; its read end is ours.
TEST(Subprocess, ExtraPipeAtTheChosenDescriptor) {
  SpawnOptions o = Sh("echo channel >&5; exec ls /proc/self/fd");
  o.out = Stdio::Pipe();
  o.extra_out_fd = 5;
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_GE(p->extra_fd(), 0);
  const int fd = p->ReleaseExtra();
  EXPECT_EQ(p->extra_fd(), -1);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) got.append(buf, n);
  close(fd);
  std::string out;
  for (ssize_t n; (n = read(p->stdout_fd(), buf, sizeof buf)) > 0;) out.append(buf, n);
  EXPECT_EQ(p->Wait().code, 0);
  EXPECT_EQ(got, "channel\n");
  // ls's own: stdio, the pipe at 5, and the directory it opened (the lowest free, 3).
  EXPECT_EQ(out, "0\n1\n2\n3\n5\n");
  o.extra_out_fd = 2;
  auto bad = Subprocess::Spawn(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("extra_out_fd must be 3 or more"), std::string::npos) << bad.error();
}

TEST(Subprocess, CapturesStdoutStderrAndExitCode) {
  auto r = RunAndCapture(Sh("echo out; echo err >&2; exit 3"), 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_TRUE(r->status.exited);
  EXPECT_EQ(r->status.code, 3);
  EXPECT_FALSE(r->timed_out);
}

TEST(Subprocess, EnvOverridesAndCwdApply) {
  setenv("CODL_SUBPROCESS_KEEP", "kept", 1);
  setenv("CODL_SUBPROCESS_OVERRIDE", "old", 1);
  SpawnOptions o = Sh("echo $CODL_SUBPROCESS_KEEP $CODL_SUBPROCESS_OVERRIDE; pwd");
  o.env = {{"CODL_SUBPROCESS_OVERRIDE", "new"}};
  o.cwd = "/";
  auto r = RunAndCapture(o, 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "kept new\n/\n");
}

TEST(Subprocess, ExecutableDiffersFromArgv0) {
  SpawnOptions o;
  o.argv = {"my-name", "-c", "echo $0"};
  o.executable = "/bin/sh";
  auto r = RunAndCapture(o, 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "my-name\n");
}

TEST(Subprocess, InputIsTheChildsStdin) {
  SpawnOptions o;
  o.argv = {"/bin/cat"};
  o.in = Stdio::Input("get_server_list\n");
  auto r = RunAndCapture(o, 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "get_server_list\n");
}

TEST(Subprocess, StdinDefaultsToNullWhenCapturing) {
  auto r = RunAndCapture(Argv({"/bin/cat"}), 10);  // would hang on an inherited terminal
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(r->status.code, 0);
}

TEST(Subprocess, StderrSameAsStdoutKeepsWriteOrder) {
  SpawnOptions o = Sh("echo 1; echo 2 >&2; echo 3");
  o.err = Stdio::SameAsStdout();
  auto r = RunAndCapture(o, 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "1\n2\n3\n");
  EXPECT_EQ(r->err, "");
}

TEST(Subprocess, FileRedirectionAppendsOrTruncates) {
  const std::string dir = TempDir();
  const std::string log = dir + "/log";
  for (int i = 0; i < 2; ++i) {
    SpawnOptions o = Sh("echo run; echo oops >&2");
    o.out = Stdio::File(log, /*append=*/true);
    o.err = Stdio::SameAsStdout();
    ASSERT_TRUE(RunAndCapture(o, 10).ok());
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "run\noops\nrun\noops\n");
  SpawnOptions o = Sh("echo only");
  o.out = Stdio::File(log);
  ASSERT_TRUE(RunAndCapture(o, 10).ok());
  std::ifstream again(log);
  std::stringstream text2;
  text2 << again.rdbuf();
  EXPECT_EQ(text2.str(), "only\n");
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, TimeoutKillsAndKeepsWhatWasWritten) {
  auto r = RunAndCapture(Sh("echo started; exec sleep 30"), 0.3);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->status.exited);
  EXPECT_EQ(r->status.signal, SIGKILL);
  EXPECT_EQ(r->status.CodeOrNegativeSignal(), -SIGKILL);
  EXPECT_EQ(r->out, "started\n");
  EXPECT_LT(r->seconds, 10);
}

TEST(Subprocess, MissingProgramExits127BadCwd126) {
  auto missing = RunAndCapture(Argv({"/nonexistent/codl-binary"}), 10);
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_EQ(missing->status.code, 127);
  SpawnOptions o = Sh("true");
  o.cwd = "/nonexistent/dir";
  auto bad_cwd = RunAndCapture(o, 10);
  ASSERT_TRUE(bad_cwd.ok()) << bad_cwd.error();
  EXPECT_EQ(bad_cwd->status.code, 126);
}

TEST(Subprocess, ChildInheritsNoExtraDescriptors) {
  const int fd = open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(fd, 3);
  auto r = RunAndCapture(
      Sh("test -e /proc/self/fd/" + std::to_string(fd) + " && echo open || echo closed"), 10);
  close(fd);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "closed\n");
}

TEST(Subprocess, ClearErrorsBeforeForking) {
  auto empty = Subprocess::Spawn(SpawnOptions{});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error(), "spawn: empty argv");

  SpawnOptions o = Sh("true");
  o.out = Stdio::File("/nonexistent/dir/log");
  auto no_file = Subprocess::Spawn(o);
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.error(),
            "spawn /bin/sh: stdout file /nonexistent/dir/log: No such file or directory");

  o.out = Stdio::Input("x");
  auto misuse = Subprocess::Spawn(o);
  ASSERT_FALSE(misuse.ok());
  EXPECT_EQ(misuse.error(), "spawn /bin/sh: Stdio::Input is for stdin, not stdout");

  SpawnOptions big = Sh("cat");
  big.in = Stdio::Input(std::string(1 << 20, 'x'));
  auto too_big = Subprocess::Spawn(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error(), "spawn /bin/sh: stdin input of 1048576 bytes does not fit a pipe");
}

TEST(Subprocess, TryWaitAndWaitForWhileRunning) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  auto c = Subprocess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->TryWait().has_value());
  EXPECT_FALSE(c->WaitFor(0).has_value());
  EXPECT_FALSE(c->reaped());
  c->Signal(SIGKILL);
  auto s = c->WaitFor(10);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->signal, SIGKILL);
  EXPECT_TRUE(c->reaped());
  EXPECT_EQ(c->Wait().signal, SIGKILL);  // the saved status, no second waitpid
}

// Daemons block SIGTERM in every thread to sigwait for it; their children must not inherit that.
TEST(Subprocess, ChildStartsWithNoBlockedSignals) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  auto c = Subprocess::Spawn(o);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(c.ok()) << c.error();
  c->Signal(SIGTERM);
  auto s = c->WaitFor(10);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->signal, SIGTERM);
}

TEST(Subprocess, OwnGroupSignalReachesGrandchildren) {
  SpawnOptions o = Sh("sleep 30 & echo $!; wait");
  o.group = SpawnOptions::Group::kOwnGroup;
  o.out = Stdio::Pipe();
  auto c = Subprocess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(getpgid(c->pid()), c->pid());
  std::string line;
  char ch;
  while (read(c->stdout_fd(), &ch, 1) == 1 && ch != '\n') line += ch;
  const pid_t grandchild = std::atoi(line.c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(getpgid(grandchild), c->pid());
  c->SignalGroup(SIGKILL);
  EXPECT_EQ(c->Wait().signal, SIGKILL);
  // SIGKILL is delivered to the whole group at once; the grandchild may take a moment to die.
  for (int i = 0; i < 1000 && Running(grandchild); ++i) usleep(1000);
  EXPECT_FALSE(Running(grandchild));
}

TEST(Subprocess, OwnSessionLeadsItsSession) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  o.group = SpawnOptions::Group::kOwnSession;
  auto c = Subprocess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.error();
  for (int i = 0; i < 1000 && getsid(c->pid()) != c->pid(); ++i) usleep(1000);
  EXPECT_EQ(getsid(c->pid()), c->pid());
  c->SignalGroup(SIGKILL);
  EXPECT_EQ(c->Wait().signal, SIGKILL);
}

// The setting itself (which thread's exit fires it depends on the kernel; the agent forks from
// a thread that never exits, so either way the signal comes only when the agent dies).
TEST(Subprocess, DeathSignalIsSetInTheChild) {
  SpawnOptions o;
  o.death_signal = SIGKILL;
  auto c = Subprocess::ForkCall(o, [] {
    int sig = 0;
    return prctl(PR_GET_PDEATHSIG, &sig) == 0 ? sig : 100;
  });
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->Wait().code, SIGKILL);
  auto plain = Subprocess::ForkCall(SpawnOptions{}, [] {
    int sig = -1;
    return prctl(PR_GET_PDEATHSIG, &sig) == 0 ? sig : 100;
  });
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->Wait().code, 0);
}

TEST(Subprocess, ForkCallRunsTheBodyInTheChild) {
  SpawnOptions o;
  o.out = Stdio::Pipe();
  o.err = Stdio::Null();
  const pid_t parent = getpid();
  auto c = Subprocess::ForkCall(o, [parent] {
    const std::string text = getppid() == parent ? "child of parent\n" : "orphan\n";
    return write(1, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 7 : 1;
  });
  ASSERT_TRUE(c.ok()) << c.error();
  CapturedRun r = CaptureOutput(*c, 10);
  EXPECT_EQ(r.out, "child of parent\n");
  EXPECT_EQ(r.status.code, 7);

  SpawnOptions with_argv;
  with_argv.argv = {"/bin/true"};
  auto refused = Subprocess::ForkCall(with_argv, [] { return 0; });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "ForkCall: argv and env must be empty (nothing is exec'ed)");
}

}  // namespace
}  // namespace codl
