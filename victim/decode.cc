#include "victim/decode.h"

namespace codl::victim {

uint64_t DecodeSample(uint8_t* data, size_t n, int passes) {
  constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;
  constexpr uint64_t kFnvPrime = 0x100000001B3ull;
  uint64_t h = 0;
  for (int p = 0; p < passes; ++p) {
    h = kFnvOffset + static_cast<uint64_t>(p);
    for (size_t i = 0; i < n; ++i) {
      h = (h ^ data[i]) * kFnvPrime;
      data[i] = static_cast<uint8_t>(data[i] ^ (h >> 56));
    }
  }
  return h;
}

}  // namespace codl::victim
