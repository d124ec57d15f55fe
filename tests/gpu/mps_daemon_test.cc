// MPS control-daemon handling without a GPU: directory defaults, the control-socket liveness
// check, the child-process runner, and the whole start / use / quit lifecycle against a fake
// nvidia-cuda-mps-control (a shell + python3 stand-in that listens on the same socket).
#include "injectors/gpu/mps_daemon.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "injectors/gpu/gpu_probe.h"
#include "injectors/gpu/mps_start.h"

namespace codl::injectors::gpu {
namespace {

namespace fs = std::filesystem;

// Short paths: MPS pipe dirs must stay under 80 characters.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/codl-gpu-test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Listening Unix socket at `path` (a live daemon's control socket, as far as a client can tell).
int Listen(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  EXPECT_EQ(listen(fd, 4), 0);
  return fd;
}

TEST(MpsDirsTest, Defaults) {
  MpsDirs d = ResolveMpsDirs("", "", {});
  EXPECT_EQ(d.pipe_dir, "/tmp/codl-mps/pipe");
  EXPECT_EQ(d.log_dir, "/tmp/codl-mps/log");
  d = ResolveMpsDirs("", "", {"/scratch/codl"});
  EXPECT_EQ(d.pipe_dir, "/scratch/codl/codl-mps/pipe");
  EXPECT_EQ(d.log_dir, "/scratch/codl/codl-mps/log");
  d = ResolveMpsDirs("/tmp/nvidia-mps", "", {"/scratch/codl"});
  EXPECT_EQ(d.pipe_dir, "/tmp/nvidia-mps");
  EXPECT_EQ(d.log_dir, "/tmp/nvidia-mps-log");
  d = ResolveMpsDirs("/p", "/l", {});
  EXPECT_EQ(d.log_dir, "/l");
}

TEST(MpsDirsTest, PipeDirChecks) {
  EXPECT_EQ(CheckMpsPipeDir("/tmp/codl-mps/pipe").message(), "");
  EXPECT_EQ(CheckMpsPipeDir("pipe").message(),
            "option 'pipe_dir': 'pipe' must be an absolute path");
}

TEST(MpsControlRunningTest, LiveSocketOnlyCountsWhenSomeoneListens) {
  TempDir dir;
  EXPECT_FALSE(MpsControlRunning(dir.path()));
  const int fd = Listen(dir.path() + "/control");
  EXPECT_TRUE(MpsControlRunning(dir.path()));
  close(fd);  // the socket file stays, like after a crashed daemon
  EXPECT_TRUE(fs::exists(dir.path() + "/control"));
  EXPECT_FALSE(MpsControlRunning(dir.path()));
}

TEST(RunProcessTest, FeedsInputAndCapturesOutput) {
  auto r = RunProcess({"/bin/cat"}, {}, "get_server_list\n", 10);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->output, "get_server_list\n");
}

TEST(RunProcessTest, PassesEnvironment) {
  auto r = RunProcess({"/bin/sh", "-c", "echo $CUDA_MPS_PIPE_DIRECTORY; exit 3"},
                      {{"CUDA_MPS_PIPE_DIRECTORY", "/x/y"}}, "", 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output, "/x/y\n");
  EXPECT_EQ(r->exit_code, 3);
}

TEST(RunProcessTest, KillsAtTheTimeout) {
  const double t0 = MonotonicSeconds();
  auto r = RunProcess({"/bin/sleep", "30"}, {}, "", 0.3);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_LT(MonotonicSeconds() - t0, 5);
}

TEST(RunProcessTest, MissingProgramExits127) {
  auto r = RunProcess({"/nonexistent/codl-binary"}, {}, "", 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
}

// A daemon started by the injector must not hold codl-inject's stdout (the agent's pipe) or
// any other inherited descriptor.
TEST(RunProcessTest, ChildInheritsNoExtraDescriptors) {
  const int fd = open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(fd, 3);
  const std::string probe =
      "test -e /proc/self/fd/" + std::to_string(fd) + " && echo open || echo closed";
  auto r = RunProcess({"/bin/sh", "-c", probe}, {}, "", 10);
  close(fd);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output, "closed\n");
}

// The fake control program: `-d` starts a background listener on $PIPE/control that exits on
// "quit"; otherwise it reads one command from stdin like the real client does.
constexpr const char* kFakeControl = R"(#!/bin/sh
ctl="$CUDA_MPS_PIPE_DIRECTORY/control"
if [ "$1" = "-d" ]; then
  echo "fake daemon starting visible=${CUDA_VISIBLE_DEVICES-unset}" >> "$CUDA_MPS_LOG_DIRECTORY/control.log"
  python3 -c '
import os, socket, sys
p = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(p); s.listen(8)
while True:
    c, _ = s.accept()
    if c.recv(64).startswith(b"quit"):
        os.unlink(p); sys.exit(0)
    c.close()
' "$ctl" &
  exit 0
fi
read -r cmd
case "$cmd" in
  quit) python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b"quit")' "$ctl" ;;
  get_server_list) echo 4242 ;;
  "get_client_list 4242") echo "$FAKE_MPS_CLIENT" ;;
  *) echo "unknown command $cmd"; exit 1 ;;
esac
)";

class FakeMpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindOnPath("python3").empty())
      GTEST_SKIP() << "python3 not on PATH (the fake daemon needs it)";
    const std::string bin = dir_.path() + "/bin";
    fs::create_directory(bin);
    const std::string control = bin + "/nvidia-cuda-mps-control";
    std::ofstream(control) << kFakeControl;
    chmod(control.c_str(), 0755);
    const char* path = std::getenv("PATH");
    old_path_ = path != nullptr ? path : "";
    setenv("PATH", (bin + ":" + old_path_).c_str(), 1);
    setenv("FAKE_MPS_CLIENT", std::to_string(getpid()).c_str(), 1);
    dirs_ = MpsDirs{dir_.path() + "/pipe", dir_.path() + "/log", {dir_.path()}};
  }
  void TearDown() override {
    if (!old_path_.empty()) setenv("PATH", old_path_.c_str(), 1);
  }

  TempDir dir_;
  std::string old_path_;
  MpsDirs dirs_;
};

TEST_F(FakeMpsTest, StartsUsesAndQuitsItsOwnDaemon) {
  {
    auto control = MpsControl::Acquire(dirs_, true, StopToken());
    ASSERT_TRUE(control.ok()) << control.error();
    EXPECT_TRUE((*control)->started());
    EXPECT_TRUE(MpsControlRunning(dirs_.pipe_dir));
    auto servers = (*control)->Command("get_server_list");
    ASSERT_TRUE(servers.ok()) << servers.error();
    EXPECT_EQ(*servers, "4242\n");
    EXPECT_TRUE((*control)->HasClient(getpid()));
    EXPECT_FALSE((*control)->HasClient(getpid() + 1));

    // A second user finds the running daemon and must not stop it.
    auto second = MpsControl::Acquire(dirs_, true, StopToken());
    ASSERT_TRUE(second.ok()) << second.error();
    EXPECT_FALSE((*second)->started());
    second->reset();
    EXPECT_TRUE(MpsControlRunning(dirs_.pipe_dir));
  }  // the starter quits it
  EXPECT_FALSE(MpsControlRunning(dirs_.pipe_dir));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Eight co-tenants (one per GPU) on one pipe dir: exactly one starts the daemon, the others
// join it, and it outlives all but its starter.
TEST_F(FakeMpsTest, ConcurrentCotenantsStartOneDaemon) {
  constexpr int kCotenants = 8;
  std::vector<std::unique_ptr<MpsControl>> controls(kCotenants);
  std::vector<std::string> errors(kCotenants);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCotenants; ++i) {
    threads.emplace_back([&, i] {
      auto c = MpsControl::Acquire(dirs_, true, StopToken());
      if (c.ok()) {
        controls[i] = std::move(*c);
      } else {
        errors[i] = c.error();
      }
    });
  }
  for (auto& t : threads) t.join();
  int started = 0;
  for (int i = 0; i < kCotenants; ++i) {
    ASSERT_TRUE(controls[i] != nullptr) << errors[i];
    started += controls[i]->started() ? 1 : 0;
  }
  EXPECT_EQ(started, 1);
  EXPECT_EQ(CountOf(ReadFile(dirs_.log_dir + "/control.log"), "fake daemon starting"), 1);
  for (auto& c : controls) {
    if (!c->started()) c.reset();  // the joiners leave first: the daemon stays
  }
  EXPECT_TRUE(MpsControlRunning(dirs_.pipe_dir));
  controls.clear();  // the starter quits it
  EXPECT_FALSE(MpsControlRunning(dirs_.pipe_dir));
}

TEST_F(FakeMpsTest, DaemonDoesNotInheritCudaVisibleDevices) {
  setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  auto control = MpsControl::Acquire(dirs_, true, StopToken());
  unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(control.ok()) << control.error();
  EXPECT_NE(ReadFile(dirs_.log_dir + "/control.log").find("visible=unset"), std::string::npos)
      << ReadFile(dirs_.log_dir + "/control.log");
}

// The victim joined the daemon this co-tenant started and runs into the next phase: quitting
// would take its MPS server away.
TEST_F(FakeMpsTest, LeavesRunningADaemonAnotherProcessStillUses) {
  auto control = MpsControl::Acquire(dirs_, true, StopToken());
  ASSERT_TRUE(control.ok()) << control.error();
  ASSERT_TRUE((*control)->started());
  setenv("FAKE_MPS_CLIENT", "4243", 1);  // a victim's PID
  Status s = (*control)->QuitIfUnused();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("processes 4243 (the victim?) still use it"), std::string::npos)
      << s.error();
  EXPECT_NE(s.error().find("quit it with: echo quit | CUDA_MPS_PIPE_DIRECTORY=" + dirs_.pipe_dir),
            std::string::npos);
  EXPECT_FALSE((*control)->started());  // no longer ours: the destructor leaves it alone
  control->reset();
  EXPECT_TRUE(MpsControlRunning(dirs_.pipe_dir));
  // Clean up the way the message says.
  auto quit = RunProcess({FindOnPath("nvidia-cuda-mps-control")},
                         {{"CUDA_MPS_PIPE_DIRECTORY", dirs_.pipe_dir}}, "quit\n", 10);
  ASSERT_TRUE(quit.ok());
  for (int i = 0; i < 500 && MpsControlRunning(dirs_.pipe_dir); ++i) usleep(10000);
  EXPECT_FALSE(MpsControlRunning(dirs_.pipe_dir));
}

TEST_F(FakeMpsTest, QuitsWhenOnlyThisProcessIsListed) {
  auto control = MpsControl::Acquire(dirs_, true, StopToken());
  ASSERT_TRUE(control.ok()) << control.error();
  Status s = (*control)->QuitIfUnused();  // FAKE_MPS_CLIENT is this process
  EXPECT_TRUE(s.ok()) << s.error();
  EXPECT_FALSE(MpsControlRunning(dirs_.pipe_dir));
}

TEST_F(FakeMpsTest, LogTailQuotesServerLogFirst) {
  fs::create_directories(dirs_.log_dir);
  std::ofstream(dirs_.log_dir + "/server.log") << "server failed: out of memory\n";
  auto control = MpsControl::Acquire(dirs_, true, StopToken());
  ASSERT_TRUE(control.ok()) << control.error();
  const std::string tail = (*control)->LogTail();
  EXPECT_NE(tail.find("server.log ends with:\n  server failed: out of memory"), std::string::npos)
      << tail;
  EXPECT_NE(tail.find("control.log ends with:"), std::string::npos) << tail;
  EXPECT_LT(tail.find("server.log"), tail.find("control.log"));
}

TEST(MpsStartTest, DaemonArgvScrubsTheClientEnvironment) {
  EXPECT_EQ(
      MpsDaemonStartArgv("/usr/bin/nvidia-cuda-mps-control", "/usr/bin/env"),
      (std::vector<std::string>{
          "/usr/bin/env", "-u", "CUDA_VISIBLE_DEVICES", "-u", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
          "-u", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "/usr/bin/nvidia-cuda-mps-control", "-d"}));
}

TEST(MpsStartTest, LockExcludesASecondHolderUntilReleased) {
  TempDir dir;
  auto first = MpsStartLock::Take(dir.path(), 5, StopToken());
  ASSERT_TRUE(first.ok()) << first.error();
  auto second = MpsStartLock::Take(dir.path(), 0.1, StopToken());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("(starting the MPS daemon)"), std::string::npos) << second.error();
  { MpsStartLock released = std::move(*first); }
  auto third = MpsStartLock::Take(dir.path(), 0.1, StopToken());
  EXPECT_TRUE(third.ok()) << third.error();
}

TEST_F(FakeMpsTest, RequiresARunningDaemonWhenNotAllowedToStartOne) {
  auto control = MpsControl::Acquire(dirs_, false, StopToken());
  ASSERT_FALSE(control.ok());
  EXPECT_EQ(control.error(), "no MPS control daemon is listening on " + dirs_.pipe_dir +
                                 "/control and start_daemon=false");
}

TEST(MpsControlTest, ExplainsAMissingControlProgram) {
  TempDir empty;
  const char* path = std::getenv("PATH");
  const std::string old = path != nullptr ? path : "";
  setenv("PATH", empty.path().c_str(), 1);
  auto control = MpsControl::Acquire(MpsDirs{empty.path() + "/pipe", empty.path() + "/log", {}},
                                     true, StopToken());
  setenv("PATH", old.c_str(), 1);
  ASSERT_FALSE(control.ok());
  EXPECT_EQ(control.error(), "nvidia-cuda-mps-control not found on PATH");
}

}  // namespace
}  // namespace codl::injectors::gpu
