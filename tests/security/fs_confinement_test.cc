// Security issue, item 6 (descriptor-based filesystem confinement): regression tests for the
// audit's filesystem races.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "injectors/core/scratch.h"
#include "injectors/gpu/mps_daemon.h"
#include "lib/common/safe_fs.h"

namespace codl {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/codl-sec-fs.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

size_t CountEntries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir)) ++n;
  return n;
}

class SafeFs : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ForceOpenat2FallbackForTesting(GetParam()); }
  void TearDown() override { ForceOpenat2FallbackForTesting(false); }
};

TEST_P(SafeFs, RefusesSymlinksDotDotAndAbsolutePaths) {
  TempDir root, outside;
  fs::create_directories(root.path + "/a/b");
  fs::create_directory_symlink(outside.path, root.path + "/a/link");
  auto r = OpenRootDir(root.path);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(OpenDirBeneath(r->get(), "a/b", false).ok());
  EXPECT_TRUE(OpenDirBeneath(r->get(), "", false).ok());
  EXPECT_FALSE(OpenDirBeneath(r->get(), "a/link", false).ok());
  EXPECT_FALSE(OpenDirBeneath(r->get(), "a/link/new", true).ok());
  EXPECT_FALSE(OpenDirBeneath(r->get(), "a/../..", false).ok());
  EXPECT_FALSE(OpenDirBeneath(r->get(), "/etc", false).ok());
  EXPECT_TRUE(OpenDirBeneath(r->get(), "a/new/deeper", true).ok());
  EXPECT_TRUE(fs::is_directory(root.path + "/a/new/deeper"));
  EXPECT_EQ(CountEntries(outside.path), 0u);
  // Temp files: O_EXCL and never through a symlink.
  fs::create_symlink(outside.path + "/victim", root.path + "/a/b/tmp");
  auto f = OpenFileBeneath(r->get(), "a/b/tmp", O_WRONLY | O_CREAT | O_TRUNC);
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(fs::exists(outside.path + "/victim"));
  EXPECT_TRUE(OpenFileBeneath(r->get(), "a/b/new", O_WRONLY | O_CREAT | O_EXCL).ok());
  EXPECT_EQ(OpenFileBeneath(r->get(), "a/b/new", O_WRONLY | O_CREAT | O_EXCL).status().code(),
            StatusCode::kAlreadyExists);
}

// The audit's race: the scratch dir was checked with realpath and then used by name, and a
// directory swapped for a symlink in between let 3 of 25 runs write outside the root. Here a
// thread swaps `root/d` between a real directory and a symlink to `outside` as fast as it can
// while run dirs are created and written; nothing may ever appear outside.
TEST_P(SafeFs, SymlinkSwapRaceNeverWritesOutsideScratch) {
  TempDir root, outside;
  const std::string d = root.path + "/d", real = root.path + "/real", link = root.path + "/link";
  fs::create_directory(d);
  fs::create_directory_symlink(outside.path, link);
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread swapper([&] {
    while (!stop) {
      ++swaps;
      // d <-> link (atomically where the kernel allows, else two renames).
      if (renameat2(AT_FDCWD, d.c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE) != 0) {
        rename(d.c_str(), real.c_str());
        rename(link.c_str(), d.c_str());
        rename(real.c_str(), link.c_str());
      }
      std::this_thread::yield();  // leave the other side some windows with a real directory
    }
  });
  int created = 0, refused = 0;
  // Many tries and many swaps (on a busy machine the swapper may be descheduled for a while);
  // the wall-clock cap only bounds the test, it asserts nothing.
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0;
       (i < 2000 || swaps < 500 || created < 20) && std::chrono::steady_clock::now() < cap; ++i) {
    std::this_thread::yield();
    auto run = injectors::RunDir::CreateBeneath(d + "/sub", {root.path});
    if (!run.ok()) {
      ++refused;
      continue;
    }
    ++created;
    int fd = openat(run->fd(), "file", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  stop = true;
  swapper.join();
  RecordProperty("swaps", swaps);
  RecordProperty("created", created);
  RecordProperty("refused", refused);
  EXPECT_EQ(CountEntries(outside.path), 0u)
      << created << " runs created, " << refused << " refused; something was written outside";
  EXPECT_GT(created, 0) << "the swap must not make every run fail";
}

INSTANTIATE_TEST_SUITE_P(Openat2AndFallback, SafeFs, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "fallback" : "openat2"; });

TEST(SafeFsPrivateDir, StateDirMustBeOwnedAndNotGroupWritable) {
  TempDir dir;
  auto fd = OpenRootDir(dir.path);
  ASSERT_TRUE(fd.ok());
  chmod(dir.path.c_str(), 0700);
  EXPECT_TRUE(CheckPrivateDir(fd->get(), "state dir").ok());
  chmod(dir.path.c_str(), 0777);
  Status s = CheckPrivateDir(fd->get(), "state dir");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.error().find("777"), std::string::npos) << s.error();
}

// Finding: the MPS pipe/log directories (handed to a daemon mps_cotenant starts) were created by
// name anywhere. Now beneath a scratch root by descriptor, private, or refused.
TEST(MpsDirectories, ConfinedToScratchRootsAndNeverThroughASymlink) {
  TempDir root, outside;
  const std::vector<std::string> roots = {fs::canonical(root.path).string()};
  EXPECT_TRUE(injectors::MakePrivateDirBeneath(roots[0] + "/codl-mps/pipe", roots, 0755).ok());
  EXPECT_TRUE(fs::is_directory(roots[0] + "/codl-mps/pipe"));
  EXPECT_FALSE(injectors::MakePrivateDirBeneath(outside.path + "/pipe", roots, 0755).ok());
  fs::create_directory_symlink(outside.path, roots[0] + "/evil");
  EXPECT_FALSE(injectors::MakePrivateDirBeneath(roots[0] + "/evil/pipe", roots, 0755).ok());
  EXPECT_FALSE(injectors::MakePrivateDirBeneath(roots[0] + "/a/../../x", roots, 0755).ok());
  EXPECT_EQ(CountEntries(outside.path), 0u);
  // Acquire refuses to start a daemon whose directories are outside the roots.
  injectors::gpu::MpsDirs dirs{outside.path + "/pipe", outside.path + "/log", roots};
  auto control = injectors::gpu::MpsControl::Acquire(dirs, true, injectors::StopToken());
  EXPECT_FALSE(control.ok());
  EXPECT_FALSE(fs::exists(outside.path + "/pipe"));
}

}  // namespace
}  // namespace codl
