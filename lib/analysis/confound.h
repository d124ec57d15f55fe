// What else an antagonist touched: a pairing whose antagonist used a large share of the CPU the
// victim used has a confound — part of its slowdown may be CPU contention rather than the
// antagonist's own resource (the memcpy hog at 0.5 used 0.64 of a 2-core machine's cores beside
// a victim using 1.15). docs/results.md, "Confounds".
#pragma once

#include <string>
#include <vector>

namespace codl::experiment {

struct PairingSummary;

// An antagonist's mean CPU cores above this share of the victim's is named as a confound.
constexpr double kCpuConfoundShare = 0.25;

// The resource an injector loads, as prose: "memory bandwidth" (memcpy), "storage" (io_uring),
// ...; "" for `cpu`, whose resource is the CPU itself, and for injectors it does not know.
std::string ResourceOf(const std::string& injector);

// One sentence per antagonist of `p` over the share, e.g. "membw (memcpy) used 0.40 CPU cores
// beside the victim's 0.84 (48%, over 25%): part of this slowdown may be CPU contention, not
// memory bandwidth; give it its own cores (cpus:) to separate them". Empty for the baseline, a
// cpu antagonist, or where the agent did not measure CPU time.
std::vector<std::string> CpuConfounds(const PairingSummary& p);

}  // namespace codl::experiment
