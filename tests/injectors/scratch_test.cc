// Scratch confinement: where an injector may write, and that cleanup never reaches outside.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "injectors/core/scratch.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

void Touch(const std::string& path) { std::ofstream(path) << "x"; }

pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(ScratchTest, DirInsideRootIsAcceptedAndCreated) {
  TempDir root;
  const std::vector<std::string> roots{root.path()};
  auto d = ResolveScratchDir(root.path() + "/a/b", roots);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(*d, root.path() + "/a/b");
  EXPECT_TRUE(fs::is_directory(*d));
  auto def = ResolveScratchDir("", roots);  // empty: the first root
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(*def, root.path());
}

TEST(ScratchTest, OutsideRootsIsRefused) {
  TempDir root, other;
  auto d = ResolveScratchDir(other.path(), {root.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error(), HasSubstr("outside the scratch roots"));
  // A sibling whose name merely starts with the root's name is outside too.
  fs::create_directory(root.path() + "x");
  auto sib = ResolveScratchDir(root.path() + "x", {root.path()});
  fs::remove(root.path() + "x");
  EXPECT_FALSE(sib.ok());
  // Nothing was created outside.
  auto missing = ResolveScratchDir(other.path() + "/new", {root.path()});
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(fs::exists(other.path() + "/new"));
}

TEST(ScratchTest, SymlinkEscapeIsRefused) {
  TempDir root, outside;
  fs::create_directory_symlink(outside.path(), root.path() + "/escape");
  auto d = ResolveScratchDir(root.path() + "/escape", {root.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error(), HasSubstr("resolves to '" + outside.path() + "'"));
  // ... also when the escape is an ancestor of a directory still to be created.
  auto deeper = ResolveScratchDir(root.path() + "/escape/sub", {root.path()});
  EXPECT_FALSE(deeper.ok());
  EXPECT_FALSE(fs::exists(outside.path() + "/sub"));
  // A symlink that stays inside is fine and resolves to its target.
  fs::create_directory(root.path() + "/real");
  fs::create_directory_symlink(root.path() + "/real", root.path() + "/inside");
  auto ok = ResolveScratchDir(root.path() + "/inside", {root.path()});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(*ok, root.path() + "/real");
}

TEST(ScratchTest, DotDotIsRefused) {
  TempDir root;
  fs::create_directory(root.path() + "/sub");
  auto d = ResolveScratchDir(root.path() + "/sub/..", {root.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error(), HasSubstr("contains '..'"));
  EXPECT_FALSE(ResolveScratchDir("relative/dir", {root.path()}).ok());
}

TEST(ScratchTest, DevicesAreRefused) {
  // Even with /dev as a root, a device is not a directory to write in.
  auto roots = ResolveScratchRoots({"/dev"});
  ASSERT_TRUE(roots.ok()) << roots.error();
  auto null_dev = ResolveScratchDir("/dev/null", *roots);
  ASSERT_FALSE(null_dev.ok());
  EXPECT_THAT(null_dev.error(), HasSubstr("character device"));
  struct stat st;
  if (stat("/dev/loop0", &st) == 0 && S_ISBLK(st.st_mode)) {
    auto loop = ResolveScratchDir("/dev/loop0", *roots);
    ASSERT_FALSE(loop.ok());
    EXPECT_THAT(loop.error(), HasSubstr("block device"));
  }
  // A device given as a root is refused too.
  auto bad_root = ResolveScratchRoots({"/dev/null"});
  ASSERT_FALSE(bad_root.ok());
  EXPECT_THAT(bad_root.error(), HasSubstr("not a directory"));
  EXPECT_FALSE(ResolveScratchRoots({"/no/such/root"}).ok());
}

TEST(ScratchTest, RunDirIsNamedAfterUsAndRemovedWithoutFollowingSymlinks) {
  TempDir root, outside;
  Touch(outside.path() + "/precious");
  std::string path;
  {
    auto run = RunDir::Create(root.path());
    ASSERT_TRUE(run.ok()) << run.error();
    path = run->path();
    auto start = ProcessStartTime(getpid());
    ASSERT_TRUE(start.ok());
    EXPECT_EQ(fs::path(path).filename(), RunDirName(getpid(), *start));
    fs::create_directories(path + "/x/y");
    Touch(path + "/x/y/data");
    fs::create_directory_symlink(outside.path(), path + "/link");
    EXPECT_FALSE(RunDir::Create(root.path()).ok());  // never reuses an existing dir
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists(outside.path() + "/precious"));
}

TEST(ScratchTest, CleanupStaleRemovesOnlyDeadRunsAtAnyDepth) {
  TempDir root, outside;
  Touch(outside.path() + "/precious");
  const pid_t dead = DeadPid();
  auto my_start = ProcessStartTime(getpid());
  ASSERT_TRUE(my_start.ok());
  const std::string r = root.path();
  const std::string dead1 = r + "/" + RunDirName(dead, 12345);
  const std::string dead2 = r + "/sub/" + RunDirName(dead, 777);
  const std::string reused = r + "/" + RunDirName(getpid(), *my_start + 1);  // pid reused
  const std::string live = r + "/" + RunDirName(getpid(), *my_start);
  const std::string deep = r + "/a/b/c/d/" + RunDirName(dead, 1);
  const std::string not_ours = r + "/codl-inject.12x.5";
  for (const auto& d : {dead1, dead2, reused, live, deep, not_ours})
    fs::create_directories(d + "/f");
  Touch(dead1 + "/f/file");
  fs::create_directory_symlink(outside.path(), dead1 + "/escape");
  fs::create_directory_symlink(outside.path(), r + "/" + RunDirName(dead, 99));  // a symlink

  auto removed = CleanupStale({r});
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_FALSE(fs::exists(dead1));
  EXPECT_FALSE(fs::exists(dead2));
  EXPECT_FALSE(fs::exists(reused));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_FALSE(fs::exists(deep)) << "cleanup looks at any depth";
  EXPECT_TRUE(fs::exists(not_ours));
  EXPECT_TRUE(fs::is_symlink(r + "/" + RunDirName(dead, 99)));
  EXPECT_TRUE(fs::exists(outside.path() + "/precious"));
  EXPECT_EQ(removed->size(), 4u);
}

TEST(ScratchTest, RunDirNames) {
  pid_t pid;
  uint64_t start;
  EXPECT_TRUE(ParseRunDirName("codl-inject.123.456", &pid, &start));
  EXPECT_EQ(pid, 123);
  EXPECT_EQ(start, 456u);
  for (const char* bad :
       {"codl-inject.123", "codl-inject..4", "codl-inject.1.2.3", "codl-inject.1.",
        "codl-inject.-1.2", "codl-inject.0.5", "xcodl-inject.1.2", "codl-inject.1.2 "}) {
    EXPECT_FALSE(ParseRunDirName(bad, &pid, &start)) << bad;
  }
  EXPECT_FALSE(ProcessStartTime(DeadPid()).ok());
}

TEST(ScratchTest, DefaultRootsPrecedence) {
  EXPECT_EQ(DefaultScratchRoots({"/a", "/b"}), (std::vector<std::string>{"/a", "/b"}));
  setenv("CODL_SCRATCH_ROOTS", "/x:/y", 1);
  EXPECT_EQ(DefaultScratchRoots({}), (std::vector<std::string>{"/x", "/y"}));
  unsetenv("CODL_SCRATCH_ROOTS");
  setenv("TMPDIR", "/t", 1);
  EXPECT_EQ(DefaultScratchRoots({}), (std::vector<std::string>{"/t"}));
  unsetenv("TMPDIR");
  EXPECT_EQ(DefaultScratchRoots({}), (std::vector<std::string>{"/tmp"}));
}

}  // namespace
}  // namespace codl::injectors
