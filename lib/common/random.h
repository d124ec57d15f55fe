// Portable randomness for plans and bootstraps. std::shuffle and std::uniform_int_distribution
// are implementation-defined, so a recorded seed would not reproduce the same order or interval
// across standard libraries; mt19937_64's output is fixed by the standard, and these mappings
// on top of it are ours.
#pragma once

#include <cstdint>
#include <random>
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

// Fisher-Yates, from the back.
template <class T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<size_t>(UniformBelow(rng, i))]);
  }
}

}  // namespace codl::experiment
