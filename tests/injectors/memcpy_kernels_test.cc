// The memcpy injector must really copy: a kernel that skipped bytes would inflate every
// bandwidth figure CoDL reports.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "injectors/memcpy/memcpy_kernels.h"

namespace codl::injectors {
namespace {

void CheckKernel(CopyFn copy) {
  constexpr size_t kMax = (1 << 20) + 4096;
  auto* src = static_cast<char*>(std::aligned_alloc(64, kMax));
  auto* dst = static_cast<char*>(std::aligned_alloc(64, kMax + 64));
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < kMax; ++i) src[i] = static_cast<char>(rng());
  for (size_t n : {size_t{128}, size_t{4096}, size_t{65536} + 128, size_t{1} << 20, kMax}) {
    std::memset(dst, 0x11, kMax + 64);
    copy(dst, src, n);
    EXPECT_EQ(std::memcmp(dst, src, n), 0) << "n=" << n;
    EXPECT_EQ(dst[n], 0x11) << "wrote past the end, n=" << n;
  }
  std::free(src);
  std::free(dst);
}

TEST(MemcpyKernelsTest, RegularCopies) { CheckKernel(CopyRegular); }

TEST(MemcpyKernelsTest, StreamingCopies) {
#if defined(__x86_64__)
  ASSERT_NE(StreamingKernel(), nullptr) << "every x86-64 CPU has SSE2 streaming stores";
#endif
  if (StreamingKernel() == nullptr) GTEST_SKIP() << "no streaming kernel on this CPU";
  CheckKernel(StreamingKernel());
}

// Every kernel `kernel=auto` may pick (or a user may set) copies every byte, and the names are
// the option's values.
TEST(MemcpyKernelsTest, EveryStreamingKernelCopies) {
  const auto kernels = StreamingKernels();
  if (kernels.empty()) GTEST_SKIP() << "no streaming kernel on this CPU";
  EXPECT_EQ(kernels.front().copy, StreamingKernel());
  for (const auto& k : kernels) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(std::string(k.name) == "interleaved" || std::string(k.name) == "sequential");
    CheckKernel(k.copy);
  }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx")) {
    EXPECT_EQ(kernels.size(), 2u);
  }
#endif
}

}  // namespace
}  // namespace codl::injectors
