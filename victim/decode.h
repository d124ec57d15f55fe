// The CPU decode stage: stands in for JPEG/PNG decoding and augmentation, which spend CPU time
// on every byte of every sample and stream the batch through the caches and DRAM.
#pragma once

#include <cstddef>
#include <cstdint>

namespace codl::victim {

// Runs `passes` in-place passes over data[0, n). A pass is an FNV-1a style transform: each output
// byte depends on every byte before it (a serial multiply chain, ~1 ns per byte on one core), so
// the work can be neither vectorised away nor skipped. Returns a checksum of the result.
// passes == 0 does nothing and returns 0.
uint64_t DecodeSample(uint8_t* data, size_t n, int passes);

}  // namespace codl::victim
