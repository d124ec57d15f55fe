// Unit tests of codl-victim's parts: option parsing and profiles, the sgemm, decode, the shared-
// memory allreduce, the epoch shuffle, the dataset files and the loader (with both readers).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/victim/victim_test_util.h"
#include "victim/dataset.h"
#include "victim/decode.h"
#include "victim/device.h"
#include "victim/loader.h"
#include "victim/options.h"
#include "victim/rng.h"
#include "victim/sgemm.h"

namespace codl::victim {
namespace {

using test_util::TempDir;

namespace fs = std::filesystem;

RunOptions MustParseRun(std::vector<std::string> args) {
  auto r = ParseRunArgs(args);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r->options : RunOptions{};
}

std::string RunError(std::vector<std::string> args) {
  auto r = ParseRunArgs(args);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

TEST(RunOptions, ProfilePresetsUnderExplicitFlagsWhateverTheOrder) {
  RunOptions a = MustParseRun({"--dir", "d", "--profile", "io-bound", "--batch-size", "4"});
  RunOptions b = MustParseRun({"--batch-size", "4", "--dir", "d", "--profile=io-bound"});
  for (const RunOptions& o : {a, b}) {
    EXPECT_EQ(o.profile, Profile::kIoBound);
    EXPECT_EQ(o.batch_size, 4);
    EXPECT_EQ(o.sample_size, 1024u * 1024);
    EXPECT_EQ(o.decode_work, 0);
    EXPECT_FALSE(o.sample_size_explicit);
  }
  RunOptions c = MustParseRun({"--data", "d", "--profile", "compute-bound"});
  EXPECT_EQ(c.dir, "d");
  EXPECT_GT(c.gemm_count * std::pow(c.gemm_dim, 3), a.gemm_count * std::pow(a.gemm_dim, 3));
}

TEST(RunOptions, UnitsAndDerivedValues) {
  RunOptions o = MustParseRun({"--dir", "d", "--sample-size", "64KiB", "--batch-size", "8",
                               "--gemm-dim", "512", "--gemm-flops", "1G", "--h2d-size", "batch"});
  EXPECT_EQ(o.sample_size, 65536u);
  EXPECT_TRUE(o.sample_size_explicit);
  EXPECT_EQ(o.gemm_count, 4);  // ceil(1e9 / (2 * 512^3))
  EXPECT_EQ(EffectiveH2dBytes(o, o.sample_size), 8u * 65536);
  RunOptions z = MustParseRun({"--dir", "d", "--h2d-size", "0", "--gemm-flops", "0"});
  EXPECT_EQ(EffectiveH2dBytes(z, 4096), 0u);
  EXPECT_EQ(z.gemm_count, 0);
  EXPECT_EQ(MustParseRun({"--dir", "d", "--seed", "18446744073709551615"}).seed, UINT64_MAX);
}

TEST(RunOptions, ErrorsNameTheOptionAndWhatIsAllowed) {
  std::string e = RunError({"--dir", "d", "--batch-size", "0"});
  EXPECT_NE(e.find("--batch-size"), std::string::npos) << e;
  EXPECT_NE(e.find("[1, 65536]"), std::string::npos) << e;
  e = RunError({"--dir", "d", "--reader", "aio"});
  EXPECT_NE(e.find("posix, io_uring"), std::string::npos) << e;
  e = RunError({"--dir", "d", "--read-block", "6KiB"});
  EXPECT_NE(e.find("multiple of 4KiB"), std::string::npos) << e;
  e = RunError({"--dir", "d", "--gemm-count", "2", "--gemm-flops", "1G"});
  EXPECT_NE(e.find("--gemm-count"), std::string::npos) << e;
  e = RunError({"--dir", "d", "--threads", "2.5"});
  EXPECT_NE(e.find("--threads"), std::string::npos) << e;
  e = RunError({"--dir", "d", "--seed", "-1"});
  EXPECT_NE(e.find("--seed"), std::string::npos) << e;
  EXPECT_NE(RunError({"--steps", "3"}).find("--dir is required"), std::string::npos);
  EXPECT_NE(RunError({"--dir", "d", "--steps"}).find("needs a value"), std::string::npos);
  EXPECT_NE(RunError({"--dir", "d", "--bogus", "1"}).find("unknown option '--bogus'"),
            std::string::npos);
  auto g = ParseGenDataArgs({"--dir", "d", "--sample-size", "2GiB"});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("--sample-size"), std::string::npos) << g.error();
}

// The flags come from option tables; the help is prose. Every flag a table accepts is taught.
TEST(RunOptions, OptionTablesMatchTheHelp) {
  for (const std::string& flag : RunFlags()) {
    EXPECT_NE(RunHelp().find(flag), std::string::npos) << flag << " missing from run --help";
  }
  for (const std::string& flag : GenDataFlags()) {
    EXPECT_NE(GenDataHelp().find(flag), std::string::npos)
        << flag << " missing from gen-data --help";
  }
}

TEST(RunOptions, DefaultsAliasesAndRepeatedFlags) {
  RunOptions o = MustParseRun({"--data=d", "--reader", "io-uring", "--steps", "5", "--steps=7"});
  EXPECT_EQ(o.dir, "d");
  EXPECT_EQ(o.reader, ReaderKind::kIoUring);
  EXPECT_EQ(o.steps, 7);  // the last one wins
  EXPECT_EQ(o.io_mode, IoMode::kDirect);
  EXPECT_EQ(o.queue_depth, 8);
  EXPECT_EQ(o.read_block, 1024u * 1024);
  EXPECT_EQ(o.h2d_size, -1);
  EXPECT_EQ(o.allreduce_size, 4u * 1024 * 1024);
  EXPECT_EQ(o.device, DeviceChoice::kAuto);
  EXPECT_EQ(o.warmup_steps, 2);
  EXPECT_EQ(o.seed, 1u);
  EXPECT_EQ(RunError({"--dir", "d", "--h2d-size", "lots"}).find("--h2d-size: "), 0u);
  EXPECT_NE(RunError({"--dir", "d", "--h2d-size", "lots"}).find("(or 'batch')"), std::string::npos);
  EXPECT_EQ(RunError({"--dir", "d", "extra"}),
            "unexpected argument 'extra' (see codl-victim run --help)");
  auto g = ParseGenDataArgs({"--dir=d", "--seed", "7"});
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->options.seed, 7u);
  EXPECT_EQ(g->options.samples, 256);
  EXPECT_EQ(g->options.sample_size, 128u * 1024);
}

std::vector<float> NaiveGemm(int m, int n, int k, const std::vector<float>& a,
                             const std::vector<float>& b) {
  std::vector<float> c(static_cast<size_t>(m) * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

TEST(Sgemm, MatchesTheNaiveProductOnAwkwardShapes) {
  SplitMix64 rng(7);
  for (auto [m, n, k] :
       {std::tuple{1, 1, 1}, {37, 53, 29}, {64, 64, 64}, {130, 17, 300}, {5, 2100, 9}}) {
    std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
    for (float& x : a) x = rng.Symmetric();
    for (float& x : b) x = rng.Symmetric();
    const std::vector<float> want = NaiveGemm(m, n, k, a, b);
    for (int threads : {1, 3}) {
      std::vector<float> c(want.size(), 42.0f);  // overwritten, not accumulated into
      Sgemm(m, n, k, a.data(), k, b.data(), n, c.data(), n, threads);
      double worst = 0;
      for (size_t i = 0; i < c.size(); ++i)
        worst = std::max(worst, std::fabs(double(c[i]) - want[i]));
      EXPECT_LT(worst, 1e-3 * std::sqrt(k)) << m << "x" << n << "x" << k << " threads " << threads;
    }
  }
}

TEST(Decode, TransformsDeterministicallyAndScalesWithPasses) {
  std::vector<uint8_t> data(10001);
  FillSample(3, 0, data.data(), data.size());
  const std::vector<uint8_t> original = data;
  EXPECT_EQ(DecodeSample(data.data(), data.size(), 0), 0u);
  EXPECT_EQ(data, original);
  std::vector<uint8_t> once = original, twice = original, again = original;
  const uint64_t h1 = DecodeSample(once.data(), once.size(), 1);
  DecodeSample(twice.data(), twice.size(), 2);
  EXPECT_EQ(DecodeSample(again.data(), again.size(), 1), h1);
  EXPECT_EQ(once, again);
  EXPECT_NE(once, original);
  EXPECT_NE(twice, once);
}

TEST(ShmAllreduce, EveryRankEndsWithTheMean) {
  constexpr int kRanks = 3;
  constexpr size_t kFloats = 1001;  // not a multiple of the rank count
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> devices;
  for (int r = 0; r < kRanks; ++r) {
    DeviceConfig c;
    c.grad_bytes = kFloats * sizeof(float);
    c.seed = static_cast<uint64_t>(r);
    auto device = MakeHostDevice(c);
    ASSERT_TRUE(device.ok());
    owned.push_back(std::move(*device));
    devices.push_back(owned.back().get());
    for (size_t i = 0; i < kFloats; ++i) devices[r]->HostGradients()[i] = float(r * 1000 + i % 17);
  }
  auto comm = MakeShmCommunicator(devices, kFloats);
  for (int round = 0; round < 2; ++round) {  // the second round checks the barriers reset
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] { EXPECT_TRUE(comm->Allreduce(r).ok()); });
    }
    for (auto& t : threads) t.join();
  }
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kFloats; ++i) {
      ASSERT_FLOAT_EQ(devices[r]->HostGradients()[i], 1000.0f + float(i % 17))
          << "rank " << r << " i " << i;
    }
  }
}

TEST(EpochShuffle, EveryEpochIsAPermutationAndEpochsDiffer) {
  for (uint64_t n : {1u, 2u, 7u, 64u, 100u}) {
    EpochShuffle s(n, 11);
    std::vector<uint64_t> first;
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      std::set<uint64_t> seen;
      std::vector<uint64_t> order;
      for (uint64_t i = 0; i < n; ++i) {
        order.push_back(s.At(epoch * n + i));
        seen.insert(order.back());
      }
      EXPECT_EQ(seen.size(), n);
      EXPECT_LT(*seen.rbegin(), n);
      if (epoch == 0) {
        first = order;
      } else if (n >= 7) {
        EXPECT_NE(order, first) << "n " << n << " epoch " << epoch;
      }
    }
  }
}

TEST(Dataset, GeneratesExactSizesAndShrinksCleanly) {
  TempDir dir;
  DatasetInfo info{dir.path() + "/ds", 5, 10000, 9};
  ASSERT_TRUE(GenerateDataset(info).ok());
  auto m = ReadManifest(info.dir);
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->samples, 5);
  EXPECT_EQ((*m)->sample_size, 10000u);
  EXPECT_EQ((*m)->seed, 9u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fs::file_size(SamplePath(info.dir, i)), 10000u);
  info.samples = 2;
  ASSERT_TRUE(GenerateDataset(info).ok());
  EXPECT_TRUE(fs::exists(SamplePath(info.dir, 1)));
  EXPECT_FALSE(fs::exists(SamplePath(info.dir, 2)));
  auto none = ReadManifest(dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// Every batch arrives in order, holding the right files' bytes, whatever the reader, the mode,
// and a sample size that is not a multiple of the O_DIRECT alignment or of the read block.
void CheckLoaderDeliversTheShuffledFiles(ReaderKind kind, IoMode mode) {
  TempDir dir;
  DatasetInfo info{dir.path(), 13, 10000, 5};
  ASSERT_TRUE(GenerateDataset(info).ok());
  std::string note;
  mode = ResolveIoMode(mode, SamplePath(info.dir, 0), &note);
  LoaderConfig lc;
  for (int i = 0; i < info.samples; ++i) lc.files.push_back(SamplePath(info.dir, i));
  lc.sample_size = info.sample_size;
  lc.batch_size = 4;
  lc.threads = 3;
  lc.prefetch = 2;
  lc.total_batches = 9;  // almost 3 epochs
  lc.seed = 77;
  lc.reader = {kind, mode, 4096, 3};
  auto device = MakeHostDevice({});
  auto loader = Loader::Start(lc, device->get());
  if (!loader.ok() && kind == ReaderKind::kIoUring) GTEST_SKIP() << loader.error();
  ASSERT_TRUE(loader.ok()) << loader.error();
  EpochShuffle shuffle(13, 77);
  std::vector<uint8_t> want(info.sample_size);
  for (int64_t k = 0; k < lc.total_batches; ++k) {
    auto b = (*loader)->Next();
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(b->index, k);
    EXPECT_GE(b->read_s, 0);
    for (int j = 0; j < lc.batch_size; ++j) {
      const uint64_t sample = shuffle.At(static_cast<uint64_t>(k) * lc.batch_size + j);
      FillSample(info.seed, static_cast<int64_t>(sample), want.data(), want.size());
      ASSERT_EQ(
          std::memcmp(b->data + j * RoundUpToIoAlign(info.sample_size), want.data(), want.size()),
          0)
          << "batch " << k << " slot " << j << " sample " << sample;
    }
    (*loader)->Release(*b);
  }
}

TEST(Loader, PosixDirectDeliversBatchesInOrder) {
  CheckLoaderDeliversTheShuffledFiles(ReaderKind::kPosix, IoMode::kDirect);
}
TEST(Loader, PosixFadviseDeliversBatchesInOrder) {
  CheckLoaderDeliversTheShuffledFiles(ReaderKind::kPosix, IoMode::kFadvise);
}
TEST(Loader, IoUringDirectDeliversBatchesInOrder) {
  CheckLoaderDeliversTheShuffledFiles(ReaderKind::kIoUring, IoMode::kDirect);
}
TEST(Loader, IoUringBufferedDeliversBatchesInOrder) {
  CheckLoaderDeliversTheShuffledFiles(ReaderKind::kIoUring, IoMode::kBuffered);
}

TEST(Loader, AShortSampleFailsNamingTheFile) {
  TempDir dir;
  DatasetInfo info{dir.path(), 4, 8192, 1};
  ASSERT_TRUE(GenerateDataset(info).ok());
  fs::resize_file(SamplePath(info.dir, 2), 100);
  for (ReaderKind kind : {ReaderKind::kPosix, ReaderKind::kIoUring}) {
    LoaderConfig lc;
    for (int i = 0; i < 4; ++i) lc.files.push_back(SamplePath(info.dir, i));
    lc.sample_size = info.sample_size;
    lc.batch_size = 4;
    lc.total_batches = 1;
    lc.reader = {kind, IoMode::kBuffered, 4096, 4};
    auto device = MakeHostDevice({});
    auto loader = Loader::Start(lc, device->get());
    if (!loader.ok()) continue;  // io_uring unavailable here
    auto b = (*loader)->Next();
    ASSERT_FALSE(b.ok()) << ToString(kind);
    EXPECT_NE(b.error().find("sample-00000002.bin"), std::string::npos) << b.error();
  }
}

}  // namespace
}  // namespace codl::victim
