// What an io_uring flood writes: every 4 KiB block of its file set and of its writes differs
// from every other, so storage that deduplicates cannot serve the flood from a few physical
// blocks (regression: the fill repeated one random block, and each write reused its slot's
// buffer unchanged).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "injectors/registry.h"
#include "injectors/stop_token.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

namespace fs = std::filesystem;

class NullReporter final : public Reporter {
 public:
  void Report(const Sample&) override {}
};

// The one file of the injector's run directory under `root`.
std::string ReadOnlyDataFile(const std::string& root) {
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().filename() == "file.0") {
      std::ifstream in(e.path(), std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  return "";
}

// Distinct non-zero 4 KiB blocks, and how many blocks are non-zero.
std::pair<size_t, size_t> DistinctBlocks(const std::string& data) {
  std::set<std::string> distinct;
  size_t nonzero = 0;
  for (size_t off = 0; off + 4096 <= data.size(); off += 4096) {
    std::string block = data.substr(off, 4096);
    if (block.find_first_not_of('\0') == std::string::npos) continue;
    ++nonzero;
    distinct.insert(std::move(block));
  }
  return {distinct.size(), nonzero};
}

struct Flood {
  std::unique_ptr<Injector> inj = CreateInjector("io_uring");
  codl::testing::TempDir scratch;
  HostInfo host = DetectHost({scratch.path()});

  std::string SetUp(const std::map<std::string, std::string>& options) {
    if (std::string why = inj->Unsupported(host); !why.empty()) return why;
    auto values = ParseInjectorOptions(*inj, options);
    if (!values.ok()) return values.error();
    StopSource stop;
    Status s = inj->Setup(*values, host, stop.token());
    return s.ok() ? "" : s.error();
  }
};

TEST(IoUringDataTest, TheFillMakesEveryBlockOfTheFileSetUnique) {
  Flood f;
  const std::string err = f.SetUp({{"mode", "randread"},
                                   {"nr_files", "1"},
                                   {"file_size", "8MiB"},
                                   {"block_size", "64KiB"},
                                   {"direct", "false"}});
  if (err.find("io_uring") == 0 && err.find("disabled") != std::string::npos) GTEST_SKIP() << err;
  ASSERT_EQ(err, "");
  const std::string data = ReadOnlyDataFile(f.scratch.path());
  ASSERT_EQ(data.size(), 8u << 20);
  const auto [distinct, nonzero] = DistinctBlocks(data);
  EXPECT_EQ(nonzero, 2048u);
  EXPECT_EQ(distinct, 2048u) << "4 KiB blocks repeat in the file set";
}

TEST(IoUringDataTest, EveryWriteCarriesNewData) {
  Flood f;
  // No fill: every non-zero block of the file was written by the flood itself, from 4 buffers.
  const std::string err = f.SetUp({{"mode", "randwrite"},
                                   {"nr_files", "1"},
                                   {"file_size", "1MiB"},
                                   {"block_size", "4KiB"},
                                   {"queue_depth", "4"},
                                   {"prefill", "false"},
                                   {"direct", "false"}});
  if (err.find("disabled") != std::string::npos) GTEST_SKIP() << err;
  ASSERT_EQ(err, "");
  StopSource stop;
  NullReporter reporter;
  auto run = f.inj->Run(Target::Max(), stop.token().WithDeadline(0.3), reporter);
  ASSERT_TRUE(run.ok()) << run.error();
  const std::string data = ReadOnlyDataFile(f.scratch.path());
  const auto [distinct, nonzero] = DistinctBlocks(data);
  ASSERT_GT(nonzero, 16u) << "the flood wrote almost nothing in 0.3 s";
  EXPECT_EQ(distinct, nonzero) << "writes repeat their buffers' data";
}

}  // namespace
}  // namespace codl::injectors
