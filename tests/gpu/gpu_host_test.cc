// Host-side rules of the GPU injectors: nccl-tests' busbw factors, collective shapes, the
// rendezvous hex encoding and stdout protocol lines, and the duty cycle. No GPU needed.
#include "injectors/gpu/gpu_host.h"

#include <gtest/gtest.h>

#include <random>

namespace codl::injectors::gpu {
namespace {

TEST(BusBwFactorTest, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBwFactor(NcclOp::kBroadcast, 8), 1.0);
}

TEST(BusBwFactorTest, OneRankReportsAlgorithmBandwidth) {
  for (NcclOp op : {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
                    NcclOp::kAllToAll, NcclOp::kBroadcast}) {
    EXPECT_DOUBLE_EQ(BusBwFactor(op, 1), 1.0) << NcclOpName(op);
  }
}

TEST(BusBwFactorTest, HelpTextListsEveryFactor) {
  EXPECT_EQ(BusBwFactorHelp(),
            "allreduce 2(n-1)/n, allgather (n-1)/n, reducescatter (n-1)/n, alltoall (n-1)/n, "
            "broadcast 1; with 1 rank the factor is 1 (algbw)");
}

TEST(NcclOpTest, ParsesNamesAndRejectsUnknown) {
  for (const auto& name : NcclOpNames()) {
    auto op = ParseNcclOp(name);
    ASSERT_TRUE(op.ok()) << name;
    EXPECT_EQ(NcclOpName(*op), name);
  }
  auto bad = ParseNcclOp("allsum");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "unknown NCCL op 'allsum' (known: allreduce, allgather, reducescatter, alltoall, "
            "broadcast)");
}

TEST(NcclShapeTest, FollowsNcclTestsSizeSemantics) {
  auto ar = NcclShapeFor(NcclOp::kAllReduce, 1 << 20, 4, 4);
  ASSERT_TRUE(ar.ok());
  EXPECT_EQ(ar->send_count, 262144u);
  EXPECT_EQ(ar->recv_count, 262144u);
  EXPECT_EQ(ar->alg_bytes, 1u << 20);

  // allgather: size is the total output; 1000 bytes over 3 ranks rounds to 249 floats.
  auto ag = NcclShapeFor(NcclOp::kAllGather, 1000, 3, 4);
  ASSERT_TRUE(ag.ok());
  EXPECT_EQ(ag->send_count, 83u);
  EXPECT_EQ(ag->recv_count, 249u);
  EXPECT_EQ(ag->alg_bytes, 996u);

  auto rs = NcclShapeFor(NcclOp::kReduceScatter, 4096, 4, 4);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->send_count, 1024u);
  EXPECT_EQ(rs->recv_count, 256u);

  auto a2a = NcclShapeFor(NcclOp::kAllToAll, 4096, 4, 4);
  ASSERT_TRUE(a2a.ok());
  EXPECT_EQ(a2a->send_count, 1024u);
  EXPECT_EQ(a2a->recv_count, 1024u);
  EXPECT_EQ(a2a->chunk_count, 256u);
}

TEST(NcclShapeTest, TooSmallSizeNamesTheOption) {
  auto s = NcclShapeFor(NcclOp::kAllGather, 4, 2, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(),
            "option 'size': 4 bytes is too small for allgather over 2 rank(s) (needs at least 8 "
            "bytes)");
}

TEST(DutyCycleTest, OpensTheFirstFractionOfEachPeriod) {
  DutyCycle d(0.25, 0.1);
  EXPECT_DOUBLE_EQ(d.WaitAt(0), 0);
  EXPECT_DOUBLE_EQ(d.WaitAt(0.02), 0);
  EXPECT_NEAR(d.WaitAt(0.03), 0.07, 1e-12);
  EXPECT_NEAR(d.WaitAt(0.099), 0.001, 1e-12);
  EXPECT_DOUBLE_EQ(d.WaitAt(0.12), 0);
  EXPECT_DOUBLE_EQ(d.pacing_scale(), 0.25);
}

TEST(DutyCycleTest, FullDutyNeverWaits) {
  DutyCycle d(1, 0.1);
  for (double t : {0.0, 0.05, 0.099, 3.7}) EXPECT_EQ(d.WaitAt(t), 0);
  EXPECT_DOUBLE_EQ(d.pacing_scale(), 1);
}

TEST(ReasonTest, NoDeviceReasonAndVersions) {
  EXPECT_EQ(NoDeviceReason(100, "no CUDA-capable device is detected"),
            "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected)");
  EXPECT_EQ(CudaVersionString(13000), "13.0");
  EXPECT_EQ(CudaVersionString(12040), "12.4");
  EXPECT_EQ(CudaVersionString(0), "");
}

}  // namespace
}  // namespace codl::injectors::gpu
