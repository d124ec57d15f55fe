// injectors/core/memory_room.h on fake /proc and cgroup trees: MemAvailable, never MemFree, and
// the tightest cgroup level's limit minus its working set, on v1 and v2.
#include "injectors/core/memory_room.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

namespace fs = std::filesystem;

void PutRoomFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

class MemoryRoomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    PutRoomFile(dir_ + "/proc/meminfo",
                "MemTotal:       24576000 kB\nMemFree:          215040 kB\nMemAvailable:   "
                "23068672 kB\nCached:         22000000 kB\n");
  }
  testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(MemoryRoomTest, AFullPageCacheStillLeavesRoom) {
  PutRoomFile(dir_ + "/proc/self/cgroup", "0::/\n");
  auto room = ReadMemoryRoom(dir_ + "/proc", dir_ + "/cg");
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->mem_available, 23068672ull * 1024) << "MemAvailable, not MemFree";
  EXPECT_FALSE(room->cgroup_room.has_value());
  EXPECT_EQ(room->bytes(), room->mem_available);
  EXPECT_EQ(room->Describe(), "22.00 GiB available (MemAvailable 22.00 GiB)");
}

TEST_F(MemoryRoomTest, V2TheTightestLevelsLimitLessItsWorkingSet) {
  PutRoomFile(dir_ + "/proc/self/cgroup", "0::/jobs/train\n");
  // /jobs: 8 GiB limit, 6 GiB used of which 4 GiB inactive file pages -> 6 GiB of room.
  PutRoomFile(dir_ + "/cg/jobs/memory.max", "8589934592\n");
  PutRoomFile(dir_ + "/cg/jobs/memory.current", "6442450944\n");
  PutRoomFile(dir_ + "/cg/jobs/memory.stat", "anon 2147483648\ninactive_file 4294967296\n");
  // /jobs/train: no limit of its own.
  PutRoomFile(dir_ + "/cg/jobs/train/memory.max", "max\n");
  PutRoomFile(dir_ + "/cg/jobs/train/memory.current", "100\n");
  auto room = ReadMemoryRoom(dir_ + "/proc", dir_ + "/cg");
  ASSERT_TRUE(room.has_value());
  ASSERT_TRUE(room->cgroup_room.has_value());
  EXPECT_EQ(*room->cgroup_room, 6ull << 30);
  EXPECT_EQ(room->bytes(), 6ull << 30);
  EXPECT_EQ(room->cgroup, "/jobs");
  EXPECT_EQ(room->Describe(),
            "6.00 GiB available (MemAvailable 22.00 GiB; cgroup /jobs: 6.00 GiB under its limit)");
}

TEST_F(MemoryRoomTest, V1MemoryControllerOnAHybridHost) {
  PutRoomFile(dir_ + "/proc/self/cgroup", "4:memory:/box\n3:cpuset:/\n0::/\n");
  PutRoomFile(dir_ + "/cg/memory/box/memory.limit_in_bytes", "2147483648\n");
  PutRoomFile(dir_ + "/cg/memory/box/memory.usage_in_bytes", "2147483648\n");
  PutRoomFile(dir_ + "/cg/memory/box/memory.stat",
              "inactive_file 1\ntotal_inactive_file 1073741824\n");
  auto room = ReadMemoryRoom(dir_ + "/proc", dir_ + "/cg");
  ASSERT_TRUE(room.has_value());
  ASSERT_TRUE(room->cgroup_room.has_value());
  EXPECT_EQ(*room->cgroup_room, 1ull << 30) << "total_inactive_file is reclaimable";
}

TEST_F(MemoryRoomTest, V1UnlimitedAndUnreadableLevelsAreNoLimit) {
  PutRoomFile(dir_ + "/proc/self/cgroup", "4:memory:/box\n");
  PutRoomFile(dir_ + "/cg/memory/box/memory.limit_in_bytes", "9223372036854771712\n");
  PutRoomFile(dir_ + "/cg/memory/box/memory.usage_in_bytes", "5\n");
  auto room = ReadMemoryRoom(dir_ + "/proc", dir_ + "/cg");
  ASSERT_TRUE(room.has_value());
  EXPECT_FALSE(room->cgroup_room.has_value());
  EXPECT_FALSE(CgroupRoom({"garbage", "1", ""}).has_value());
  EXPECT_EQ(CgroupRoom({"100", "150", ""}).value(), 0u) << "over its limit: no room";
}

TEST_F(MemoryRoomTest, NoMemAvailableMeansUnknown) {
  PutRoomFile(dir_ + "/proc/meminfo", "MemTotal: 1000 kB\nMemFree: 10 kB\n");
  EXPECT_FALSE(ReadMemoryRoom(dir_ + "/proc", dir_ + "/cg").has_value());
}

}  // namespace
}  // namespace codl::injectors
