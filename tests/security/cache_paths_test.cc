// Issue 48, items 1 and 3 (agent/page_cache.h): the paths of victim.cache are resolved beneath
// their root once, never again by name, so a racing swap of a directory for a symlink never
// makes the (root) agent read outside its roots; only regular files and directories the
// victim could read itself are acted on; and the work is bounded: a huge sparse file is refused
// by its size with a clear message, without allocating, and cancel and the time cap stop it.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "agent/page_cache.h"

namespace codl::agent {
namespace {

namespace fs = std::filesystem;

void Write(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, 's');
}

class CachePaths : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/codl-cache-paths.XXXXXX";  // on the disk, as datasets are
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_);
    fs::create_directories(outside_ + "/inner");
    Write(outside_ + "/secret", kSecretBytes);
    Write(outside_ + "/inner/secret", kSecretBytes);
  }
  void TearDown() override { fs::remove_all(base_); }
  CacheScope Scope() const { return CacheScope{{root_}, std::nullopt, {}}; }
  static experiment::CacheSpec Spec(const std::string& mode, const std::string& path) {
    experiment::CacheSpec s;
    s.mode = mode;
    s.paths = {path};
    return s;
  }
  static constexpr size_t kSecretBytes = 7777;
  static constexpr size_t kDataBytes = 1000;
  std::string base_, root_, outside_;
};

// The attack of the issue: while the agent prepares the cache, another process swaps a
// directory under the root for a symlink to a directory outside it, as fast as it can. With the
// path checked by name and then walked again by name, the agent read the outside file in 5 of
// 30 trials. Here, 200 preparations (the swapped directory as the path itself, and as a
// directory the path goes through) never count a byte of what lies outside.
TEST_F(CachePaths, ASymlinkSwapRacingThePreparationNeverReachesOutsideTheRoot) {
  fs::create_directories(root_ + "/ds/inner");
  Write(root_ + "/ds/data", kDataBytes);
  Write(root_ + "/ds/inner/data", kDataBytes);
  fs::create_directory_symlink(outside_, root_ + "/ds-link");
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread racer([&] {
    const std::string a = root_ + "/ds", b = root_ + "/ds-link";
    while (!stop) {
      // Atomic exchange: at every instant "ds" is either the directory or the symlink.
      if (renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  int ok = 0, refused = 0;
  for (int i = 0; i < 200; ++i) {
    for (const std::string& path : {root_ + "/ds", root_ + "/ds/inner"}) {
      auto r = PrepareCache(Spec(i % 2 ? "warm" : "as-is", path), Scope());
      if (r.ok()) {
        ++ok;
        // ds: its two data files; ds/inner: one. A secret would add 7777.
        EXPECT_TRUE(r->total_bytes == static_cast<int64_t>(kDataBytes) ||
                    r->total_bytes == static_cast<int64_t>(2 * kDataBytes))
            << "read outside the root: " << r->total_bytes << " bytes under " << path;
      } else {
        ++refused;
        EXPECT_TRUE(r.code() == StatusCode::kPermissionDenied ||
                    r.code() == StatusCode::kInvalidArgument || r.code() == StatusCode::kNotFound)
            << r.error();
      }
    }
  }
  stop = true;
  racer.join();
  EXPECT_GT(swaps.load(), 100) << "the racer did not race";
  EXPECT_GT(ok, 0) << "some preparations must have found the directory in place";
  EXPECT_GT(refused, 0) << "and some the symlink";
}

TEST_F(CachePaths, OnlyRegularFilesAndDirectoriesNeverALinkOrAFifo) {
  fs::create_directories(root_ + "/ds");
  Write(root_ + "/ds/data", kDataBytes);
  ASSERT_EQ(mkfifo((root_ + "/ds/fifo").c_str(), 0644), 0);
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0644), 0);
  fs::create_symlink(outside_ + "/secret", root_ + "/ds/link");
  // Inside a directory they are skipped (a FIFO never opened: it would block a reader).
  auto in = PrepareCache(Spec("warm", root_ + "/ds"), Scope());
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_EQ(in->files, 1);
  EXPECT_EQ(in->total_bytes, static_cast<int64_t>(kDataBytes));
  // Named as the path, they are refused saying what they are.
  auto fifo = PrepareCache(Spec("warm", root_ + "/fifo"), Scope());
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().find("is a FIFO"), std::string::npos) << fifo.error();
  auto link = PrepareCache(Spec("warm", root_ + "/ds/link"), Scope());
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().find("is a symbolic link"), std::string::npos) << link.error();
  auto dotdot = PrepareCache(Spec("warm", root_ + "/ds/../../outside"), Scope());
  ASSERT_FALSE(dotdot.ok());
  EXPECT_EQ(dotdot.code(), StatusCode::kInvalidArgument) << dotdot.error();
}

TEST_F(CachePaths, NoFurtherThanTheVictimCouldReadItself) {
  fs::create_directories(root_ + "/ds");
  Write(root_ + "/ds/public", kDataBytes);
  Write(root_ + "/ds/private", kSecretBytes);
  ASSERT_EQ(chmod((root_ + "/ds/public").c_str(), 0644), 0);
  ASSERT_EQ(chmod((root_ + "/ds/private").c_str(), 0600), 0);
  ASSERT_EQ(chmod(base_.c_str(), 0755), 0);
  // A victim user that owns none of these files: only "other" bits apply to it.
  CacheScope scope = Scope();
  scope.run_as = RunAs{geteuid() == 65534 ? 65533u : 65534u, 65534, {}, "victim"};
  auto dir = PrepareCache(Spec("warm", root_ + "/ds"), scope);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->files, 1) << "the 0600 file is skipped";
  EXPECT_EQ(dir->total_bytes, static_cast<int64_t>(kDataBytes));
  auto named = PrepareCache(Spec("cold", root_ + "/ds/private"), scope);
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(named.error().find("not readable by the victim's user (victim)"), std::string::npos)
      << named.error();
  // Without a victim user (the agent runs victims as itself) the kernel decides: all of it.
  auto own = PrepareCache(Spec("warm", root_ + "/ds"), Scope());
  ASSERT_TRUE(own.ok()) << own.error();
  EXPECT_EQ(own->files, 2);
}

long MaxRssKiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// A victim left `truncate -s 15T` in the scratch root and the next experiment named it: the
// agent allocated a byte per page (3.75 GiB) and died. Now the trial fails by the file's size,
// naming the path, its size and the cap, with nothing allocated for it.
TEST_F(CachePaths, AHugeSparseFileFailsByItsSizeWithoutAllocating) {
  const std::string huge = root_ + "/huge";
  const int fd = open(huge.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t{15} << 40), 0) << "the file system must allow sparse files";
  close(fd);
  const long rss_before = MaxRssKiB();
  for (const char* mode : {"warm", "cold", "as-is"}) {
    auto r = PrepareCache(Spec(mode, huge), Scope());
    ASSERT_FALSE(r.ok()) << mode;
    EXPECT_EQ(r.code(), StatusCode::kResourceExhausted) << r.error();
    EXPECT_NE(r.error().find(huge + " is 15.00 TiB"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("over this agent's cache_max_bytes of"), std::string::npos)
        << r.error();
  }
  EXPECT_LT(MaxRssKiB() - rss_before, 64 * 1024) << "KiB of peak RSS added";
  // Under a cap that allows it, the bytes before it count: the sum of the paths is capped.
  Write(root_ + "/small", 4 << 20);
  CacheScope capped = Scope();
  capped.limits.max_bytes = 6 << 20;
  experiment::CacheSpec two = Spec("as-is", root_ + "/small");
  two.paths.push_back(root_ + "/small");
  auto over = PrepareCache(two, capped);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().find("(after 4.00 MiB under the paths before it)"), std::string::npos)
      << over.error();
}

TEST_F(CachePaths, CancelAndTheTimeCapStopTheWorkBetweenWindows) {
  const std::string big = root_ + "/big";
  const int fd = open(big.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t{8} << 30), 0);
  close(fd);
  CacheScope scope = Scope();
  scope.limits.max_bytes = int64_t{16} << 30;
  std::atomic<bool> cancel{true};
  const auto t0 = std::chrono::steady_clock::now();
  auto cancelled = PrepareCache(Spec("warm", big), scope, &cancel);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.code(), StatusCode::kCancelled) << cancelled.error();
  scope.limits.max_seconds = 0.2;
  auto timed = PrepareCache(Spec("warm", big), scope);
  ASSERT_FALSE(timed.ok()) << "8 GiB of zeros read in 0.2 s?";
  EXPECT_EQ(timed.code(), StatusCode::kDeadlineExceeded) << timed.error();
  EXPECT_NE(timed.error().find("cache_max_time (0.2 s)"), std::string::npos) << timed.error();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

}  // namespace
}  // namespace codl::agent
