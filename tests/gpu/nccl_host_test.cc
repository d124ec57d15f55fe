// The nccl injector's host-side rules: stop grace, NCCL_DEBUG routing, memory and CTA checks,
// and the init-timeout message.
#include "injectors/gpu/nccl_host.h"

#include <gtest/gtest.h>

namespace codl::injectors::gpu {
namespace {

TEST(NcclStopGraceTest, FloorWhenPeersAreFastAndAlwaysOn) {
  EXPECT_DOUBLE_EQ(NcclStopGraceS(4, 0, DutyCycle(1, 0.1)), kNcclStopFloorS);
  EXPECT_DOUBLE_EQ(NcclStopGraceS(4, 0.01, DutyCycle(1, 0.1)), kNcclStopFloorS + 0.08);
}

// The reviewed defect: with duty < 1 and a 2 s period the drain waited a fixed 2 s while a peer
// could still be in its off-window, then aborted a healthy communicator.
TEST(NcclStopGraceTest, CoversAnOffWindowAndStretchedSegments) {
  const DutyCycle duty(0.5, 2.0);
  const double grace = NcclStopGraceS(4, 0.1, duty);
  EXPECT_GT(grace, duty.period() + kNcclStopFloorS);
  EXPECT_DOUBLE_EQ(grace, kNcclStopFloorS + 2 * 4 * 0.1 / 0.5 + 2.0);
}

TEST(NcclStopGraceTest, IsCappedAndIgnoresNonsense) {
  EXPECT_DOUBLE_EQ(NcclStopGraceS(1024, 10, DutyCycle(0.01, 10)), kNcclStopCapS);
  EXPECT_DOUBLE_EQ(NcclStopGraceS(4, -1, DutyCycle(1, 0.1)), kNcclStopFloorS);
  EXPECT_DOUBLE_EQ(NcclStopGraceS(4, 1.0 / 0.0, DutyCycle(1, 0.1)), kNcclStopFloorS);
}

TEST(NcclDebugFileTest, NeverTruncatesARegularFileStderr) {
  EXPECT_EQ(NcclDebugFile(false, "/scratch"), "/dev/stderr");
  EXPECT_EQ(NcclDebugFile(true, "/scratch"), "/scratch/nccl.%h.%p.log");
  EXPECT_EQ(NcclDebugFile(true, ""), "/tmp/nccl.%h.%p.log");
}

TEST(NcclMemoryTest, NeedsBuffersPlusTheCommunicator) {
  const uint64_t gib = 1ull << 30;
  EXPECT_EQ(CheckNcclMemory(10 * gib, gib, 0).message(), "");
  const std::string e = CheckNcclMemory(gib, gib / 2, 3).message();
  EXPECT_NE(e.find("nccl: device 3 has 1.00 GiB free"), std::string::npos) << e;
  EXPECT_NE(e.find("victim"), std::string::npos) << e;
}

TEST(NcclCtasTest, MinMustNotExceedMax) {
  EXPECT_EQ(CheckNcclCtas(0, 0).message(), "");
  EXPECT_EQ(CheckNcclCtas(4, 0).message(), "");
  EXPECT_EQ(CheckNcclCtas(2, 8).message(), "");
  EXPECT_EQ(CheckNcclCtas(8, 2).message(), "option 'min_ctas': 8 exceeds max_ctas (2)");
}

TEST(NcclInitTimeoutTest, NamesTheUsualMultiNodeCause) {
  const std::string m = NcclInitTimeoutMessage(1, 2, "5s", "exp/nccl");
  EXPECT_EQ(m.rfind("nccl: rank 1 of 2: not all ranks joined within 5s (rendezvous key "
                    "'exp/nccl')",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("NCCL_SOCKET_IFNAME"), std::string::npos);
}

}  // namespace
}  // namespace codl::injectors::gpu
