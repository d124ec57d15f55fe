// victim.cache: evicts the victim's data from the page cache (cold) or reads it in (warm) before
// a trial, and measures how much of it is resident when the victim starts (mincore), so that
// "was the dataset already in memory?" is recorded rather than left to chance. Paths must
// resolve inside the agent's scratch or cache roots; symbolic links under them are not followed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "lib/spec/spec.h"

namespace codl::agent {

struct CacheReport {
  int64_t files = 0;
  int64_t total_bytes = 0;     // of the regular files under the paths
  int64_t resident_bytes = 0;  // of those, in the page cache after the mode was applied
};

// At most this many files are visited under all paths together; more is an error (a path that
// is a whole file system, not a dataset).
inline constexpr int64_t kMaxCacheFiles = 1'000'000;

// Applies spec.mode to the regular files under spec.paths, then measures their residency.
// Fails (naming the path) when a path does not exist or resolves outside every root.
// cold: fdatasync + posix_fadvise(DONTNEED) per file (pages another process keeps dirty or
// mapped may stay); warm: reads every file through; as-is: measures only.
Result<CacheReport> PrepareCache(const experiment::CacheSpec& spec,
                                 const std::vector<std::string>& roots);

}  // namespace codl::agent
