// Scratch confinement: where injectors may create files, and how they are cleaned up.
//
// Rules (an injector that writes must follow all of them):
//   * Writes happen only inside a directory that resolves (realpath, symlinks followed) to a
//     scratch root or below it. A `..` component is refused outright; a symlink that leads
//     outside the roots is refused; anything that is not a directory (a block device, a char
//     device, a file) is refused, so a block device is never opened for writing.
//   * The check above is by name and only gives early, readable errors. The run directory is then
//     reached by descriptor (RunDir::CreateBeneath, lib/common/safe_fs.h): from an open root,
//     each component beneath it without following any symlink, so a directory swapped for a
//     symlink after the check makes the run fail instead of writing outside the root.
//   * Each run works in its own fresh subdirectory DIR/codl-inject.<pid>.<starttime>/
//     (starttime = field 22 of /proc/<pid>/stat, so a recycled pid is not mistaken for us),
//     created with mkdir (never reused) and removed by RunDir's destructor.
//   * A SIGKILLed run leaves its directory behind; CleanupStale() removes those whose
//     (pid, starttime) no longer names a live process. See CleanupStale for its safety rules.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "lib/common/safe_fs.h"

namespace codl::injectors {

// Roots from --scratch-root flags, else $CODL_SCRATCH_ROOTS (colon-separated), else $TMPDIR,
// else /tmp. Returned as given (not resolved).
std::vector<std::string> DefaultScratchRoots(const std::vector<std::string>& flags);

// Realpaths each root; a root that does not exist or is not a directory is an error.
Result<std::vector<std::string>> ResolveScratchRoots(const std::vector<std::string>& roots);

// Checks `dir` (empty: the first root) against the rules above and returns its realpath.
// A missing `dir` is created (mkdir -p) only when its existing ancestor is inside a root.
// `roots` must already be resolved.
Result<std::string> ResolveScratchDir(const std::string& dir,
                                      const std::vector<std::string>& roots);

// Creates `dir` (absolute, no "..", lexically under one of the resolved `roots`) and its missing
// parents by descriptor from that root, never following a symlink, and checks that the result
// is owned by us and not writable by group or others. For directories that outlive a run (the
// MPS pipe and log directories an injector hands to a daemon it starts).
Status MakePrivateDirBeneath(const std::string& dir, const std::vector<std::string>& roots,
                             mode_t mode = 0700);

// Start time of a process in clock ticks since boot (/proc/<pid>/stat field 22).
Result<uint64_t> ProcessStartTime(pid_t pid);

// "codl-inject.<pid>.<starttime>"
std::string RunDirName(pid_t pid, uint64_t start_time);

// This process's run directory under a resolved scratch dir, removed (recursively, without
// following symlinks) on destruction. Move-only.
class RunDir {
 public:
  // A fresh run dir in the directory `parent` (which the caller trusts; its last component must
  // not be a symlink).
  static Result<RunDir> Create(const std::string& parent);
  // A fresh run dir in `dir` (absolute, lexically under one of the resolved `roots`), reached by
  // descriptor from that root without following symlinks; missing components are created.
  static Result<RunDir> CreateBeneath(const std::string& dir,
                                      const std::vector<std::string>& roots);
  RunDir() = default;
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&& other) noexcept;
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  ~RunDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }  // O_DIRECTORY fd, for openat()
  void Remove();                  // idempotent

 private:
  static Result<RunDir> CreateIn(UniqueFd parent, const std::string& parent_path);
  std::string path_;
  std::string name_;  // beneath parent_
  UniqueFd parent_;
  int fd_ = -1;
};

// Removes stale run directories under each root. Safety rules:
//   * looks for `codl-inject.<pid>.<starttime>` at any depth below the root (an injector's `dir`
//     may be anywhere beneath it), down to kMaxCleanupDepth levels;
//   * never follows symlinks (neither while scanning nor while deleting: removal is
//     openat/unlinkat with O_NOFOLLOW) and never crosses into another filesystem;
//   * only real directories owned by the calling user, whose name matches the pattern exactly
//     and whose (pid, starttime) is not a live process in this pid namespace.
// Returns the paths removed; errors only for a root that cannot be read.
Result<std::vector<std::string>> CleanupStale(const std::vector<std::string>& roots);
inline constexpr int kMaxCleanupDepth = 64;

// Parses "codl-inject.<pid>.<starttime>"; false if the name does not match exactly.
bool ParseRunDirName(const std::string& name, pid_t* pid, uint64_t* start_time);

}  // namespace codl::injectors
