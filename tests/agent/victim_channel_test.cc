// The victim's progress channel (issue 27, item 4): every victim gets a pipe at CODL_PROGRESS_FD
// whose lines are CoDL jsonl records; once it carries anything, the job's stdout is its own and
// never parsed as steps. Stdout victims keep working; the codl Python package is put first on
// the victim's PYTHONPATH.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/victim_runner.h"
#include "lib/common/clock.h"
#include "lib/common/compress.h"

namespace codl::agent {
namespace {

experiment::VictimSpec Shell(const std::string& script) {
  experiment::VictimSpec v;
  v.command = {"sh", "-c", script};
  v.timeout_s = 30;
  return v;
}

TEST(VictimChannel, RecordsOnTheChannelWinAndStdoutIsLeftToTheJob) {
  VictimRunner runner(SystemClock::Get());
  // The job's own prints look like steps (0.9 s) but are not on the channel.
  VictimOutcome o =
      runner.Run(Shell("echo '{\"step_time_s\":0.9}'; "
                       "for t in 0.1 0.2 0.3; do echo "
                       "\"{\\\"step_time_s\\\":$t,\\\"phases\\\":{\\\"forward_s\\\":$t}}\" "
                       ">&$CODL_PROGRESS_FD; echo '{\"step_time_s\":0.9}'; done"));
  ASSERT_TRUE(o.progress.ok) << o.progress.error << " / " << o.stderr_tail;
  ASSERT_EQ(o.progress.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(o.progress.value_s, 0.2);
  EXPECT_DOUBLE_EQ(o.progress.phase_medians.at("forward_s"), 0.2);
}

TEST(VictimChannel, StdoutVictimsStillWork) {
  VictimRunner runner(SystemClock::Get());
  VictimOutcome o =
      runner.Run(Shell("test \"$CODL_PROGRESS_FD\" = 3 || exit 9; for t in 0.4 0.5; do "
                       "echo \"{\\\"step_time_s\\\":$t}\"; done"));
  ASSERT_TRUE(o.progress.ok) << o.progress.error;
  EXPECT_EQ(o.progress.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(o.progress.value_s, 0.45);
}

TEST(VictimChannel, OnlyTheChannelIsInheritedBeyondStdio) {
  VictimRunner runner(SystemClock::Get());
  // The victim's own descriptors: the shell becomes ls, which lists them (and the directory it
  // opened to do so, the lowest free descriptor: 4).
  VictimOutcome o = runner.Run(Shell("exec ls /proc/self/fd >&2"));
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.stderr_tail, "0\n1\n2\n3\n4\n");
}

TEST(VictimChannel, CodlPackageIsFirstOnThePythonPath) {
  const std::string dir = ::testing::TempDir() + "/codl-py-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/codl");
  std::ofstream(dir + "/codl/__init__.py") << "\n";
  ASSERT_EQ(setenv("CODL_PYTHON_DIR", dir.c_str(), 1), 0);
  EXPECT_EQ(CodlPythonDir(), dir);
  EXPECT_EQ(VictimPythonPath(dir, {{"PYTHONPATH", "/a:/b"}}), dir + ":/a:/b");
  VictimRunner runner(SystemClock::Get());
  VictimOutcome o = runner.Run(Shell("echo \"$PYTHONPATH\" >&2; echo '{\"step_time_s\":1}'"));
  ASSERT_TRUE(o.progress.ok) << o.progress.error;
  EXPECT_EQ(o.stderr_tail.substr(0, dir.size()), dir) << o.stderr_tail;
  unsetenv("CODL_PYTHON_DIR");
  // Without the package there, the variable does not name it.
  std::filesystem::remove_all(dir);
  setenv("CODL_PYTHON_DIR", dir.c_str(), 1);
  EXPECT_NE(CodlPythonDir(), dir);
  unsetenv("CODL_PYTHON_DIR");
}

}  // namespace
}  // namespace codl::agent

namespace codl::agent {
namespace {

// victim.trace: the victim is told where to write its trace (CODL_TRACE_STEPS, CODL_TRACE_FILE
// in a directory of its own); the agent returns the file compressed and removes the directory.
TEST(VictimTrace, TheTraceTheVictimWritesComesBackCompressed) {
  VictimRunner runner(SystemClock::Get());
  experiment::VictimSpec v = Shell(
      "test \"$CODL_TRACE_STEPS\" = 3 || exit 9; "
      "printf '{\"traceEvents\":[{\"name\":\"codl.step#2\",\"ph\":\"X\",\"ts\":5,\"dur\":1}]}' "
      "> \"$CODL_TRACE_FILE\"; dirname \"$CODL_TRACE_FILE\" >&2; echo '{\"step_time_s\":0.1}'");
  v.trace_steps = 3;
  VictimOutcome o = runner.Run(v);
  ASSERT_TRUE(o.progress.ok) << o.progress.error << " / " << o.stderr_tail;
  EXPECT_EQ(o.trace_error, "");
  ASSERT_FALSE(o.trace_zlib.empty());
  auto json = ZlibDecompress(o.trace_zlib, 1 << 20);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("codl.step#2"), std::string::npos) << *json;
  EXPECT_EQ(o.trace_raw_bytes, static_cast<int64_t>(json->size()));
  std::string dir = o.stderr_tail;
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  EXPECT_NE(dir.find("codl-trace-"), std::string::npos) << dir;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the trace directory is removed";
}

TEST(VictimTrace, NoTraceWrittenOrNotARegularFileIsSaidNotRead) {
  VictimRunner runner(SystemClock::Get());
  experiment::VictimSpec none = Shell("echo '{\"step_time_s\":0.1}'");
  none.trace_steps = 2;
  VictimOutcome o = runner.Run(none);
  EXPECT_TRUE(o.trace_zlib.empty());
  EXPECT_NE(o.trace_error.find("the victim wrote no trace"), std::string::npos) << o.trace_error;

  // A symlink to a file the victim could not ship itself is never followed.
  experiment::VictimSpec link =
      Shell("ln -s /etc/passwd \"$CODL_TRACE_FILE\"; echo '{\"step_time_s\":0.1}'");
  link.trace_steps = 2;
  o = runner.Run(link);
  EXPECT_TRUE(o.trace_zlib.empty());
  EXPECT_NE(o.trace_error.find("cannot open the trace"), std::string::npos) << o.trace_error;

  // Without victim.trace nothing is set up.
  o = runner.Run(Shell("test -z \"$CODL_TRACE_FILE\" || exit 9; echo '{\"step_time_s\":0.1}'"));
  EXPECT_TRUE(o.progress.ok) << o.progress.error;
  EXPECT_EQ(o.trace_error, "");
}

}  // namespace
}  // namespace codl::agent
