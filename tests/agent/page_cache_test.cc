// victim.cache (agent/page_cache.h): cold leaves (almost) nothing of the data in the page cache,
// warm all of it, as-is measures only; paths outside the roots, missing ones, and symbolic
// links out of a root are refused or skipped.
#include "agent/page_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codl::agent {
namespace {

namespace fs = std::filesystem;

class PageCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // On the disk (ext4 here), not tmpfs: tmpfs pages cannot be evicted.
    char tmpl[] = "/var/tmp/codl-cache.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/data/sub");
    Write(root_ + "/data/a.bin", 24 << 20);
    Write(root_ + "/data/sub/b.bin", 8 << 20);
  }
  void TearDown() override { fs::remove_all(root_); }
  static void Write(const std::string& path, size_t bytes) {
    std::ofstream out(path, std::ios::binary);
    const std::vector<char> block(1 << 20, 'x');
    for (size_t n = 0; n < bytes; n += block.size()) out.write(block.data(), block.size());
  }
  experiment::CacheSpec Spec(const std::string& mode) {
    experiment::CacheSpec s;
    s.mode = mode;
    s.paths = {root_ + "/data"};
    return s;
  }
  std::string root_;
};

TEST_F(PageCacheTest, ColdEvictsWarmReadsInAsIsMeasures) {
  auto warm = PrepareCache(Spec("warm"), CacheScope{{root_}, std::nullopt, {}});
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_EQ(warm->files, 2);
  EXPECT_EQ(warm->total_bytes, 32 << 20);
  EXPECT_EQ(warm->resident_bytes, warm->total_bytes);
  auto cold = PrepareCache(Spec("cold"), CacheScope{{root_}, std::nullopt, {}});
  ASSERT_TRUE(cold.ok()) << cold.error();
  EXPECT_EQ(cold->total_bytes, 32 << 20);
  EXPECT_LT(cold->resident_bytes, cold->total_bytes / 10) << "evicted";
  auto as_is = PrepareCache(Spec("as-is"), CacheScope{{root_}, std::nullopt, {}});
  ASSERT_TRUE(as_is.ok());
  EXPECT_LT(as_is->resident_bytes, as_is->total_bytes / 10) << "as-is changes nothing";
}

TEST_F(PageCacheTest, PathsOutsideTheRootsMissingOrLinkedOutAreRefusedOrSkipped) {
  auto outside = PrepareCache(
      Spec("cold"), CacheScope{{root_ + "/elsewhere", "/nonexistent-root"}, std::nullopt, {}});
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(outside.error().find("is outside this agent's scratch and cache roots"),
            std::string::npos)
      << outside.error();
  experiment::CacheSpec missing = Spec("warm");
  missing.paths = {root_ + "/nope"};
  auto gone = PrepareCache(missing, CacheScope{{root_}, std::nullopt, {}});
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().find(root_ + "/nope"), std::string::npos) << gone.error();
  // A path that is a link (out of the root or not) is refused, saying what it is; so is a path
  // whose directories cross one.
  fs::create_directory_symlink("/etc", root_ + "/link-out");
  experiment::CacheSpec linked = Spec("warm");
  linked.paths = {root_ + "/link-out"};
  auto out = PrepareCache(linked, CacheScope{{root_}, std::nullopt, {}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("is a symbolic link"), std::string::npos) << out.error();
  linked.paths = {root_ + "/link-out/passwd"};
  auto through = PrepareCache(linked, CacheScope{{root_}, std::nullopt, {}});
  ASSERT_FALSE(through.ok());
  EXPECT_EQ(through.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(through.error().find("crosses a symbolic link"), std::string::npos) << through.error();
  // A link inside a dataset is neither followed nor counted.
  fs::create_directory_symlink("/etc", root_ + "/data/etc");
  fs::create_symlink("/etc/passwd", root_ + "/data/passwd");
  auto in = PrepareCache(Spec("warm"), CacheScope{{root_}, std::nullopt, {}});
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_EQ(in->files, 2);
  EXPECT_EQ(in->total_bytes, 32 << 20);
}

}  // namespace
}  // namespace codl::agent
