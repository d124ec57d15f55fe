// Store across processes: a reader process beside a writing one (codlctl results --db FILE while
// the controller runs), and durability when the writer is killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "lib/store/store.h"
#include "tests/lib/store/store_test_util.h"

namespace codl::store {
namespace {

using testing::ExpectSameTrial;
using testing::MakeExperiment;
using testing::MakeTrial;

// Child-process helpers: no gtest in the child; it reports through its exit code.
[[noreturn]] void ChildExit(bool ok) { _exit(ok ? 0 : 1); }

int WaitExitCode(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Kills and reaps the child if the parent leaves the test early (a failed ASSERT).
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      WaitExitCode(pid_);
    }
  }
  int Wait() { return WaitExitCode(std::exchange(pid_, -1)); }

 private:
  pid_t pid_;
};

// The child saves a trial and dies without closing the database (no destructors, no checkpoint).
void SaveThenDie(const std::string& path, bool sigkill) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = Store::Open(path);
    if (!s.ok()) ChildExit(false);
    Store* store = s->release();  // deliberately never destroyed
    if (!store->CreateExperiment(MakeExperiment("e1", 1)).ok()) ChildExit(false);
    if (!store->SaveTrial(MakeTrial("e1", 0, 40, 2, 50)).ok()) ChildExit(false);
    if (sigkill) raise(SIGKILL);
    _exit(0);
  }
  EXPECT_EQ(WaitExitCode(pid), sigkill ? 128 + SIGKILL : 0);
}

TEST(StoreDurabilityTest, TrialSurvivesWriterKilledWithSigkill) {
  testing::TempDir dir;
  const std::string path = dir.File("results.db");
  SaveThenDie(path, /*sigkill=*/true);
  // The commit lives in the write-ahead log, never checkpointed into the main file.
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  auto s = Store::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  auto trials = (*s)->GetTrials("e1");
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_EQ(trials->size(), 1u);
  ExpectSameTrial((*trials)[0], MakeTrial("e1", 0, 40, 2, 50));
}

TEST(StoreDurabilityTest, TrialSurvivesWriterThatExitsWithoutClosing) {
  testing::TempDir dir;
  const std::string path = dir.File("results.db");
  SaveThenDie(path, /*sigkill=*/false);
  auto s = Store::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  auto trials = (*s)->GetTrials("e1");
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_EQ(trials->size(), 1u);
  ExpectSameTrial((*trials)[0], MakeTrial("e1", 0, 40, 2, 50));
}

// The writer reports each index after SaveTrial returns; it is killed mid-stream, at a moment it
// does not choose. Every reported trial must be there, whole; the file must be intact.
TEST(StoreDurabilityTest, EveryAcknowledgedTrialSurvivesAKillAtAnArbitraryMoment) {
  testing::TempDir dir;
  const std::string path = dir.File("results.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto s = Store::Open(path);
    if (!s.ok()) ChildExit(false);
    Store* store = s->release();
    if (!store->CreateExperiment(MakeExperiment("e1", 1)).ok()) ChildExit(false);
    for (int i = 0; i < 100000; ++i) {
      if (!store->SaveTrial(MakeTrial("e1", i, 30, 2, 40)).ok()) ChildExit(false);
      if (write(fds[1], &i, sizeof i) != sizeof i) ChildExit(false);
    }
    ChildExit(false);
  }
  ChildGuard child(pid);
  close(fds[1]);
  int last = -1;
  for (int n = 0; n < 25; ++n) ASSERT_EQ(read(fds[0], &last, sizeof last), (ssize_t)sizeof last);
  kill(pid, SIGKILL);  // most likely in the middle of the next SaveTrial
  EXPECT_EQ(child.Wait(), 128 + SIGKILL);
  close(fds[0]);

  auto s = Store::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  auto trials = (*s)->GetTrials("e1");
  ASSERT_TRUE(trials.ok()) << trials.error();
  ASSERT_GE(static_cast<int>(trials->size()), last + 1);
  for (const TrialRecord& t : *trials) ExpectSameTrial(t, MakeTrial("e1", t.index, 30, 2, 40));
  EXPECT_EQ(testing::QueryText(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(testing::QueryInt(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

// A reader process polls while this process writes: every read succeeds (no SQLITE_BUSY) and
// sees whole trials only (each SaveTrial is atomic), and the count never goes backwards.
TEST(StoreConcurrencyTest, ReaderProcessReadsWhileWriterWrites) {
  testing::TempDir dir;
  const std::string path = dir.File("results.db");
  constexpr int kTrials = 60;
  auto w = Store::Open(path);
  ASSERT_TRUE(w.ok()) << w.error();
  Store& writer = **w;
  ASSERT_TRUE(writer.CreateExperiment(MakeExperiment("e1", 1)).ok());

  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) ChildExit(false);
    auto r = Store::Open(path);  // a second connection, as codlctl results --db would open
    if (!r.ok()) ChildExit(false);
    size_t seen = 0;
    int reads = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (seen < kTrials) {
      if (std::chrono::steady_clock::now() > deadline) ChildExit(false);
      auto trials = (*r)->GetTrials("e1");
      if (!trials.ok()) {
        fprintf(stderr, "reader: %s\n", trials.error().c_str());
        ChildExit(false);
      }
      if (trials->size() < seen) ChildExit(false);
      for (const TrialRecord& t : *trials) {
        if (t.steps.size() != 200 || t.antagonists.size() != 2 ||
            t.antagonists[1].samples.size() != 300) {
          ChildExit(false);
        }
      }
      seen = trials->size();
      ++reads;
    }
    if (!(*r)->GetExperiment("latest").ok()) ChildExit(false);
    fprintf(stderr, "reader: %d reads\n", reads);
    ChildExit(reads > 1);
  }
  ChildGuard child(pid);
  close(go[0]);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  close(go[1]);
  for (int i = 0; i < kTrials; ++i) {
    Status s = writer.SaveTrial(MakeTrial("e1", i, 200, 2, 300));
    ASSERT_TRUE(s.ok()) << s.error();
    // Resave some earlier trials too: replacement must also look atomic to the reader.
    if (i % 5 == 4) {
      ASSERT_TRUE(writer.SaveTrial(MakeTrial("e1", i - 2, 200, 2, 300)).ok());
    }
  }
  EXPECT_EQ(child.Wait(), 0);
}

}  // namespace
}  // namespace codl::store
