// codl-victim --comm tcp: the ring allreduce between ranks over loopback TCP (in-process, with
// a known sum), its setup errors, and two or three real codl-victim processes running together.
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/victim/victim_test_util.h"
#include "victim/device.h"
#include "victim/options.h"
#include "victim/tcp_allreduce.h"

extern char** environ;

namespace codl::victim {
namespace {

using test_util::ReadFile;
using test_util::TempDir;

namespace fs = std::filesystem;

// A port nobody listens on right now (bound, read, released: a small race, as in every test
// that needs a fixed port for a child).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TcpCommConfig Config(int rank, int world, int port) {
  TcpCommConfig c;
  c.rank = rank;
  c.world_size = world;
  c.master_host = "127.0.0.1";
  c.master_port = port;
  c.connect_timeout_s = 10;
  c.io_timeout_s = 10;
  return c;
}

// Rank r's gradient i is (r + 1) * (i % 7 + 1): the average over N ranks is
// (N + 1) / 2 * (i % 7 + 1), exact in floats for these small integers.
void AllreduceKnownSum(int world, size_t floats) {
  const int port = FreePort();
  std::vector<std::unique_ptr<Device>> devices;
  for (int r = 0; r < world; ++r) {
    DeviceConfig dc;
    dc.grad_bytes = floats * sizeof(float);
    devices.push_back(MakeHostDevice(dc).value());
    float* g = devices.back()->HostGradients();
    for (size_t i = 0; i < floats; ++i) g[i] = static_cast<float>((r + 1) * (i % 7 + 1));
  }
  std::vector<std::future<std::string>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::async(std::launch::async, [&, r]() -> std::string {
      auto comm = MakeTcpCommunicator(Config(r, world, port), devices[r].get(), floats);
      if (!comm.ok()) return comm.error();
      for (int step = 0; step < 2; ++step) {  // the second step averages the averages: same
        if (Status s = (*comm)->Allreduce(0); !s.ok()) return s.error();
      }
      return "";
    }));
  }
  for (auto& f : ranks) EXPECT_EQ(f.get(), "");
  const float mean_factor = (world + 1) / 2.0f;
  for (int r = 0; r < world; ++r) {
    const float* g = devices[r]->HostGradients();
    for (size_t i = 0; i < floats; ++i) {
      ASSERT_FLOAT_EQ(g[i], mean_factor * static_cast<float>(i % 7 + 1))
          << "rank " << r << " float " << i;
    }
  }
}

TEST(TcpAllreduce, TwoRanksAverageExactly) { AllreduceKnownSum(2, 1 << 20); }

// Three ranks and a float count that does not divide: chunks of unequal size.
TEST(TcpAllreduce, ThreeRanksUnevenChunks) { AllreduceKnownSum(3, 100'003); }

TEST(TcpAllreduce, RankThatCannotReachRankZeroFailsInBoundedTimeNamingTheAddress) {
  const int port = FreePort();
  DeviceConfig dc;
  dc.grad_bytes = 1024;
  auto dev = MakeHostDevice(dc);
  TcpCommConfig c = Config(1, 2, port);
  c.connect_timeout_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = MakeTcpCommunicator(c, dev->get(), 256);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.error().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << comm.error();
  EXPECT_NE(comm.error().find("rank 1"), std::string::npos) << comm.error();
  EXPECT_LT(took, 5.0);
}

TEST(TcpAllreduce, RankZeroNamesTheRanksThatNeverJoined) {
  DeviceConfig dc;
  dc.grad_bytes = 1024;
  auto dev = MakeHostDevice(dc);
  TcpCommConfig c = Config(0, 3, FreePort());
  c.connect_timeout_s = 0.3;
  auto comm = MakeTcpCommunicator(c, dev->get(), 256);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.error().find("ranks 1, 2 never joined"), std::string::npos) << comm.error();
}

TEST(TcpAllreduce, MismatchedSizesAreRefusedByRankZero) {
  const int port = FreePort();
  DeviceConfig dc;
  dc.grad_bytes = 4096;
  auto d0 = MakeHostDevice(dc), d1 = MakeHostDevice(dc);
  auto r0 = std::async(std::launch::async,
                       [&] { return MakeTcpCommunicator(Config(0, 2, port), d0->get(), 1024); });
  TcpCommConfig c1 = Config(1, 2, port);
  c1.connect_timeout_s = 3;
  auto one = MakeTcpCommunicator(c1, d1->get(), 512);
  auto zero = r0.get();
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("--allreduce-size must match"), std::string::npos) << zero.error();
  EXPECT_FALSE(one.ok());
}

// ---- options ----

Result<Parsed<RunOptions>> ParseWithEnv(std::vector<std::string> args,
                                        std::map<std::string, std::string> env) {
  return ParseRunArgs(args, [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(TcpOptions, TorchDistributedEnvironmentAndFlagsThatOverrideIt) {
  auto p = ParseWithEnv(
      {"--dir", "/x", "--comm", "tcp"},
      {{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29600"}});
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->options.comm, CommKind::kTcp);
  EXPECT_EQ(p->options.rank, 1);
  EXPECT_EQ(p->options.world_size, 3);
  EXPECT_EQ(p->options.master_host, "10.0.0.1");
  EXPECT_EQ(p->options.master_port, 29600);
  auto f = ParseWithEnv({"--dir", "/x", "--comm", "tcp", "--rank", "2", "--master", "[::1]:3000"},
                        {{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "10.0.0.1"}});
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->options.rank, 2);
  EXPECT_EQ(f->options.master_host, "::1");
  EXPECT_EQ(f->options.master_port, 3000);
}

TEST(TcpOptions, ClearErrors) {
  auto no_world = ParseWithEnv({"--dir", "/x", "--comm", "tcp"}, {});
  ASSERT_FALSE(no_world.ok());
  EXPECT_NE(no_world.error().find("WORLD_SIZE"), std::string::npos);
  auto no_master =
      ParseWithEnv({"--dir", "/x", "--comm", "tcp"}, {{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(no_master.ok());
  EXPECT_NE(no_master.error().find("MASTER_ADDR"), std::string::npos);
  auto bad_rank =
      ParseWithEnv({"--dir", "/x", "--comm", "tcp"}, {{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_NE(bad_rank.error().find("not below the world size"), std::string::npos);
  auto bad_env =
      ParseWithEnv({"--dir", "/x", "--comm", "tcp"}, {{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(bad_env.ok());
  EXPECT_NE(bad_env.error().find("RANK"), std::string::npos);
  auto threads = ParseWithEnv({"--dir", "/x", "--comm", "tcp", "--ranks", "2"}, {});
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.error().find("one rank per process"), std::string::npos);
  auto shm = ParseWithEnv({"--dir", "/x", "--rank", "1"}, {});
  ASSERT_FALSE(shm.ok());
  EXPECT_NE(shm.error().find("--rank needs --comm tcp"), std::string::npos);
  // The default stays the in-process shm allreduce, whatever the environment holds.
  auto dflt = ParseWithEnv({"--dir", "/x", "--ranks", "2"}, {{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(dflt.ok()) << dflt.error();
  EXPECT_EQ(dflt->options.comm, CommKind::kShm);
}

// ---- real processes ----

std::string BinDir() {
  if (const char* d = std::getenv("CODL_BIN_DIR")) return d;
  return fs::read_symlink("/proc/self/exe").parent_path().string();
}

// codl-victim with `extra_env` added to this process's environment; stdout/stderr to files.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
            const std::string& out, const std::string& err) {
  std::vector<std::string> env_s = extra_env;
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_s) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct RankRun {
  int exit_code = -1;
  std::string err;
  std::vector<nlohmann::json> steps;
  nlohmann::json config, summary;
};

std::vector<RankRun> RunRanks(int world, const std::vector<std::string>& extra_args) {
  TempDir tmp;
  const int port = FreePort();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const std::string dir = tmp / ("data" + std::to_string(r));  // one dataset per "node"
    std::vector<std::string> argv = {BinDir() + "/codl-victim",
                                     "run",
                                     "--dir",
                                     dir,
                                     "--comm",
                                     "tcp",
                                     "--steps",
                                     "6",
                                     "--samples",
                                     "16",
                                     "--sample-size",
                                     "16KiB",
                                     "--batch-size",
                                     "2",
                                     "--gemm-count",
                                     "0",
                                     "--io-mode",
                                     "buffered",
                                     "--connect-timeout",
                                     "20s"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    pids.push_back(Spawn(argv,
                         {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world),
                          "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)},
                         tmp / ("out" + std::to_string(r)), tmp / ("err" + std::to_string(r))));
  }
  std::vector<RankRun> runs(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    RankRun& run = runs[static_cast<size_t>(r)];
    run.exit_code = Wait(pids[static_cast<size_t>(r)]);
    run.err = ReadFile(tmp / ("err" + std::to_string(r)));
    std::istringstream lines(ReadFile(tmp / ("out" + std::to_string(r))));
    for (std::string line; std::getline(lines, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.contains("config")) run.config = j;
      else if (j.contains("summary")) run.summary = j;
      else if (j.contains("step")) run.steps.push_back(j);
    }
  }
  return runs;
}

void ExpectRanksAgree(int world) {
  auto runs = RunRanks(world, {"--allreduce-size", "1MiB"});
  for (int r = 0; r < world; ++r) {
    const RankRun& run = runs[static_cast<size_t>(r)];
    ASSERT_EQ(run.exit_code, 0) << "rank " << r << ": " << run.err;
    EXPECT_EQ(run.steps.size(), runs[0].steps.size()) << "rank " << r;
    EXPECT_EQ(run.config["rank"], r);
    EXPECT_EQ(run.config["world_size"], world);
    EXPECT_NE(run.config["comm"].get<std::string>().find("tcp ring"), std::string::npos);
    for (const auto& s : run.steps) EXPECT_TRUE(s["phases"].contains("comm_s")) << s.dump();
  }
  EXPECT_EQ(runs[0].steps.size(), 8u);  // 2 warm-up + 6
}

TEST(TcpVictimProcesses, TwoRanksCompleteWithEqualStepCounts) { ExpectRanksAgree(2); }
TEST(TcpVictimProcesses, ThreeRanksCompleteWithEqualStepCounts) { ExpectRanksAgree(3); }

TEST(TcpVictimProcesses, RankWithoutRankZeroExitsOneNamingTheAddress) {
  TempDir tmp;
  const int port = FreePort();
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = Spawn(
      {BinDir() + "/codl-victim", "run", "--dir", tmp / "d", "--comm", "tcp", "--samples", "4",
       "--sample-size", "4KiB", "--connect-timeout", "1s", "--io-mode", "buffered"},
      {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)},
      tmp / "out", tmp / "err");
  EXPECT_EQ(Wait(pid), 1);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 10.0);
  const std::string err = ReadFile(tmp / "err");
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
}

}  // namespace
}  // namespace codl::victim
