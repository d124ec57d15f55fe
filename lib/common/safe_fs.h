// Descriptor-based filesystem confinement (security issue, item 6).
//
// A path checked by name (realpath, lstat) and then used by name can be swapped for a symlink
// in between. These helpers never use a checked name again: everything is opened relative to a
// directory descriptor that was verified once, without following symlinks and without leaving
// that directory — openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where
// the kernel has it (5.6+), else one component at a time with openat(O_NOFOLLOW | O_DIRECTORY).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl {

// An owned file descriptor (closed on destruction). Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Opens the directory `rel` beneath the directory `root_fd`. `rel` is relative ("a/b"; "" or
// "." is root itself); ".." components, absolute paths and symlinks anywhere are refused.
// create: missing components are made with mkdirat(mode) — each made beneath the descriptor of
// its verified parent, so a racing rename or symlink cannot redirect it.
Result<UniqueFd> OpenDirBeneath(int root_fd, std::string_view rel, bool create, mode_t mode = 0755);

// Opens the file `rel` beneath `root_fd` with `flags` (O_NOFOLLOW and O_CLOEXEC are added;
// pass O_CREAT | O_EXCL for a new temp file).
Result<UniqueFd> OpenFileBeneath(int root_fd, std::string_view rel, int flags, mode_t mode = 0600);

// `path` relative to `root` when it is `root` or lies beneath it ("" for the root itself, "a/b"
// beneath it), by text alone: both absolute and normalized (no "//", ".", ".." or trailing '/').
std::optional<std::string> RelativeBeneath(const std::string& path, const std::string& root);

// Opens an absolute directory path the caller trusts (a configured root) as a descriptor: the
// last component must not be a symlink and must be a directory.
Result<UniqueFd> OpenRootDir(const std::string& path);

// A directory whose contents the process acts on (e.g. the agent's state dir) must be owned by
// the effective user and not writable by group or others; the error names `what`.
Status CheckPrivateDir(int dir_fd, const std::string& what);

// Whether the running kernel has openat2 (tests use it to name the path they exercised).
bool HaveOpenat2();
// Forces the component-walk fallback (tests only).
void ForceOpenat2FallbackForTesting(bool force);

}  // namespace codl
