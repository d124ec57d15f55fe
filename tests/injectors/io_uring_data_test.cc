// What an io_uring flood writes: every 4 KiB block of its file set and of its writes differs
// from every other, so storage that deduplicates cannot serve the flood from a few physical
// blocks (regression: the fill repeated one random block, and each write reused its slot's
// buffer unchanged).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "injectors/core/registry.h"
#include "injectors/core/stop_token.h"
#include "injectors/io_uring/io_uring_injector.h"
#include "tests/injectors/test_util.h"

namespace codl::injectors {
namespace {

namespace fs = std::filesystem;

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
    if (std::string why = inj->Unsupported(host).message(); !why.empty()) return why;
    auto values = ParseInjectorOptions(*inj, options);
    if (!values.ok()) return values.error();
    StopSource stop;
    CollectingHostServices services;
    Status s = inj->Setup(*values, host, services, stop.token());
    return s.ok() ? "" : s.error();
  }

  // Floods at --max for `seconds`.
  Result<RunSummary> RunMax(double seconds) {
    StopSource stop;
    codl::testing::NullReporter reporter;
    return inj->Run(Target::Max(), stop.token().WithDeadline(seconds), reporter);
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
  auto run = f.RunMax(0.3);
  ASSERT_TRUE(run.ok()) << run.error();
  const std::string data = ReadOnlyDataFile(f.scratch.path());
  const auto [distinct, nonzero] = DistinctBlocks(data);
  ASSERT_GT(nonzero, 16u) << "the flood wrote almost nothing in 0.3 s";
  EXPECT_EQ(distinct, nonzero) << "writes repeat their buffers' data";
}

// The summary's note "submitted N I/Os in M calls (…)": {N, M}, or {0, 0} when absent.
std::pair<uint64_t, uint64_t> SubmitCounts(const RunSummary& s) {
  for (const std::string& n : s.notes) {
    unsigned long long ios = 0, calls = 0;
    if (std::sscanf(n.c_str(), "submitted %llu I/Os in %llu calls", &ios, &calls) == 2)
      return {ios, calls};
  }
  return {0, 0};
}

// How many I/Os one submit call carries: submit_batch=1 (the default, as fio) submits each I/O
// on its own, so Linux passes it to the device at once instead of holding a batch behind a
// block plug (which made 4 KiB random I/O slower on a virtual disk, docs/performance.md);
// 0 submits everything ready in one call; N at most N per call.
TEST(IoUringDataTest, SubmitBatchSetsIosPerSubmitCall) {
  for (const char* batch : {"", "1", "0", "4"}) {
    Flood f;
    std::map<std::string, std::string> options = {
        {"mode", "randread"},  {"nr_files", "1"},   {"file_size", "1MiB"},   {"block_size", "4KiB"},
        {"queue_depth", "16"}, {"direct", "false"}, {"complete_batch", "16"}};
    if (*batch) options["submit_batch"] = batch;
    const std::string err = f.SetUp(options);
    if (err.find("disabled") != std::string::npos) GTEST_SKIP() << err;
    ASSERT_EQ(err, "");
    auto run = f.RunMax(0.2);
    ASSERT_TRUE(run.ok()) << run.error();
    const auto [ios, calls] = SubmitCounts(*run);
    SCOPED_TRACE(std::string("submit_batch '") + batch + "'");
    ASSERT_GT(calls, 10u) << "no submit note, or almost no I/O in 0.2 s";
    const std::string b = batch;
    if (b == "" || b == "1") {
      EXPECT_EQ(ios, calls);
    }
    // complete_batch=16: each wake-up frees all 16 slots at once.
    if (b == "0") {
      EXPECT_GT(ios, 8 * calls) << "all ready I/Os should go in one call";
    }
    if (b == "4") {
      EXPECT_LE(ios, 4 * calls);
      EXPECT_GT(ios, 3 * calls);
    }
  }
}

// "always", "madvise" or "never": the bracketed word of the THP setting ("" when unknown).
std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string all((std::istreambuf_iterator<char>(in)), {});
  const size_t a = all.find('['), b = all.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : all.substr(a + 1, b - a - 1);
}

// The THPeligible flag of the mapping holding `p` in /proc/self/smaps (-1: not found).
int ThpEligible(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::atoi(line.c_str() + 12);
    }
  }
  return -1;
}

// Large blocks reach the device whole only from physically contiguous buffers: the buffers are
// 2 MiB-aligned and advised for transparent huge pages (a 1 MiB read doubled on a virtio disk,
// docs/performance.md); huge_buffers=false keeps plain pages.
TEST(IoUringDataTest, LargeBuffersAskForHugePages) {
  using io_uring_internal::AllocIoBuffers;
  const std::string mode = ThpMode();
  if (mode.empty() || mode == "never") GTEST_SKIP() << "transparent huge pages off here";
  std::string note;
  auto huge = AllocIoBuffers(4u << 20, true, &note);
  ASSERT_TRUE(huge);
  EXPECT_EQ(note, "");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(huge.get()) % (2u << 20), 0u);
  std::memset(huge.get(), 1, 4u << 20);
  if (ThpEligible(huge.get()) == -1) GTEST_SKIP() << "no THPeligible in /proc/self/smaps";
  EXPECT_EQ(ThpEligible(huge.get()), 1);
  if (mode == "madvise") {  // under "always" every large mapping is eligible
    auto plain = AllocIoBuffers(4u << 20, false, &note);
    ASSERT_TRUE(plain);
    std::memset(plain.get(), 1, 4u << 20);
    EXPECT_EQ(ThpEligible(plain.get()), 0);
  }
  auto small = AllocIoBuffers(64u << 10, true, &note);  // under 2 MiB: plain pages, 4 KiB-aligned
  ASSERT_TRUE(small);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.get()) % 4096, 0u);
}

}  // namespace
}  // namespace codl::injectors
