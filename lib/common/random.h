// Portable randomness. For plans and bootstraps: std::shuffle and std::uniform_int_distribution
// are implementation-defined, so a recorded seed would not reproduce the same order or interval
// across standard libraries; mt19937_64's output is fixed by the standard, and these mappings
// on top of it are ours. For hot loops (injectors' offsets, pointer-chase orders): the one fast
// generator, XorShift64Star.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace codl::experiment {

// Uniform integer in [0, n), n > 0, by rejection: unbiased and identical on every platform.
inline uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::mt19937_64::max() - std::mt19937_64::max() % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

// FNV-1a of `s`: a seed derived from a name (a pairing key, a phase) that is the same on every
// platform, unlike std::hash.
inline uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Fisher-Yates, from the back.
template <class T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<size_t>(UniformBelow(rng, i))]);
  }
}

}  // namespace codl::experiment

namespace codl {

// xorshift64* (Vigna, 2016): a few cycles per draw and good enough to spread offsets or shuffle
// an access order; never for anything cryptographic or statistical. The state must not be 0
// (it would stay 0): a 0 seed is replaced by a fixed odd constant.
class XorShift64Star {
 public:
  explicit XorShift64Star(uint64_t seed) : s_(seed != 0 ? seed : 0x9e3779b97f4a7c15ULL) {}
  uint64_t Next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 2685821657736338717ULL;
  }

 private:
  uint64_t s_;
};

}  // namespace codl
