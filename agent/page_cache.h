// victim.cache: evicts the victim's data from the page cache (cold) or reads it in (warm) before
// a trial, and measures how much of it is resident when the victim starts (mincore), so that
// "was the dataset already in memory?" is recorded rather than left to chance.
//
// The agent is usually root and the paths come from an experiment, so (docs/security.md,
// "Paths an experiment names"):
// - each root is opened once, and every path is resolved beneath its root's descriptor, never
//   again by name: no symlink anywhere in it (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or
//   the O_NOFOLLOW walk of safe_fs.h), no "..". A directory swapped for a symlink mid-walk is
//   refused by the kernel, not by a check that raced it.
// - only regular files and directories are acted on (fstat of the opened descriptor; a device,
//   FIFO or socket is never opened for reading), and, when the victim runs as another user, only
//   what that user could read itself.
// - the work is bounded: residency is measured and files read or evicted in fixed windows, with
//   a cap on the bytes (a sparse 15 TiB file is refused by its size) and the time per trial, and
//   a cancellation check between windows.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "lib/common/subprocess.h"
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
// Directories nest at most this deep below a path.
inline constexpr int kMaxCacheDepth = 64;
// Residency is measured, and files evicted, this much at a time.
inline constexpr int64_t kCacheWindowBytes = int64_t{1} << 30;

// Per-trial caps (agent config keys cache_max_bytes, cache_max_time; docs/configuration.md).
struct CacheLimits {
  // The bytes under all paths together. Default: the node's memory, as warming more than fits
  // evicts what was just read, and a cold file bigger than memory was not cached anyway.
  int64_t max_bytes = 0;  // 0: DefaultCacheMaxBytes()
  double max_seconds = 300;
};
int64_t DefaultCacheMaxBytes();

// Who the work is done for: the roots paths must lie beneath (the scratch and cache roots), and
// the victim's user (nullopt: the agent's own, whose permissions the kernel applies).
struct CacheScope {
  std::vector<std::string> roots;
  std::optional<RunAs> run_as;
  CacheLimits limits;
};

// Applies spec.mode to the regular files under spec.paths, then measures their residency.
// Fails (naming the path) when a path does not exist, lies outside every root, crosses a
// symlink, is not a regular file or directory, or is not readable by the victim's user; when
// the paths hold more than limits.max_bytes (naming the path, its size and the cap); after
// limits.max_seconds (DeadlineExceeded); and when `cancel` is set (Cancelled).
// cold: fdatasync + posix_fadvise(DONTNEED) per file (pages another process keeps dirty or
// mapped may stay); warm: reads every file through; as-is: measures only.
Result<CacheReport> PrepareCache(const experiment::CacheSpec& spec, const CacheScope& scope,
                                 const std::atomic<bool>* cancel = nullptr);

}  // namespace codl::agent
