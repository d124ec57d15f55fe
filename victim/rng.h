// SplitMix64: the one deterministic generator of codl-victim (dataset bytes, shuffling, matrix
// initialisation). Tiny and stateless apart from one word, so that "same seed, same bytes"
// holds across compilers and standard libraries (std:: distributions do not guarantee that).
#pragma once

#include <cstdint>

namespace codl::victim {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0); the modulo bias is irrelevant for shuffling and test data.
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Uniform float in [-1, 1).
  float Symmetric() {
    return static_cast<float>(static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0);
  }

 private:
  uint64_t state_;
};

// Mixes two words into a seed, so (seed, index) pairs give unrelated streams.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  SplitMix64 g(a ^ (b * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  return g.Next();
}

}  // namespace codl::victim
