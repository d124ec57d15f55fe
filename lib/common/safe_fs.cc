#include "lib/common/safe_fs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace codl {
namespace {

std::atomic<bool> force_fallback{false};

std::string Errno(int err) { return std::strerror(err); }

// Splits "a/b//c" into {"a","b","c"}; refuses absolute paths and "..".
Result<std::vector<std::string>> Components(std::string_view rel) {
  if (!rel.empty() && rel.front() == '/') {
    return InvalidArgument("'" + std::string(rel) + "' is absolute; a relative path is needed");
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    if (slash == std::string_view::npos) slash = rel.size();
    std::string_view part = rel.substr(start, slash - start);
    if (part == "..") return InvalidArgument("'" + std::string(rel) + "' contains '..'");
    if (!part.empty() && part != ".") out.emplace_back(part);
    start = slash + 1;
  }
  return out;
}

long Openat2(int dirfd, const std::string& path, uint64_t flags, mode_t mode) {
  if (force_fallback) {
    errno = ENOSYS;
    return -1;
  }
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
}

// One directory component beneath `parent`, optionally created; never a symlink.
Result<UniqueFd> OpenComponent(int parent, const std::string& name, bool create, mode_t mode) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(parent, name.c_str(), flags);
  if (fd < 0 && errno == ENOENT && create) {
    if (mkdirat(parent, name.c_str(), mode) != 0 && errno != EEXIST) {
      return Err("cannot create '" + name + "': " + Errno(errno));
    }
    fd = openat(parent, name.c_str(), flags);
  }
  if (fd < 0) {
    // O_NOFOLLOW on a symlink gives ELOOP; O_DIRECTORY on one (older kernels) ENOTDIR.
    const int err = errno;
    if (err == ELOOP) return PermissionDenied("'" + name + "' is a symlink; refused");
    return Err("cannot open '" + name + "': " + Errno(err));
  }
  return UniqueFd(fd);
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

bool HaveOpenat2() {
  if (force_fallback) return false;
  long fd = Openat2(AT_FDCWD, ".", O_RDONLY | O_DIRECTORY, 0);
  if (fd >= 0) close(static_cast<int>(fd));
  return fd >= 0 || errno != ENOSYS;
}

void ForceOpenat2FallbackForTesting(bool force) { force_fallback = force; }

Result<UniqueFd> OpenDirBeneath(int root_fd, std::string_view rel, bool create, mode_t mode) {
  auto parts = Components(rel);
  if (!parts.ok()) return parts.status();
  std::string joined;
  for (const auto& p : *parts) joined += (joined.empty() ? "" : "/") + p;
  if (joined.empty()) joined = ".";
  // Fast path: the whole path in one kernel-confined lookup.
  long fd = Openat2(root_fd, joined, O_RDONLY | O_DIRECTORY, 0);
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  if (errno == EXDEV || errno == ELOOP) {
    return PermissionDenied("'" + joined + "' leaves its root or crosses a symlink; refused");
  }
  // EAGAIN: a rename ran during the lookup (the kernel cannot prove confinement): the walk
  // below is confined too and does not care about renames.
  if (errno != ENOSYS && errno != EAGAIN && !(errno == ENOENT && create)) {
    return Err("cannot open '" + joined + "': " + Errno(errno));
  }
  // Component walk: each step is one name beneath a descriptor we hold.
  UniqueFd cur(fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid()) return Err("cannot duplicate the root descriptor: " + Errno(errno));
  for (const auto& name : *parts) {
    auto next = OpenComponent(cur.get(), name, create, mode);
    if (!next.ok()) return Error{"'" + joined + "': " + next.error(), next.status().code()};
    cur = std::move(next.value());
  }
  return cur;
}

Result<UniqueFd> OpenFileBeneath(int root_fd, std::string_view rel, int flags, mode_t mode) {
  auto parts = Components(rel);
  if (!parts.ok()) return parts.status();
  if (parts->empty()) return InvalidArgument("no file name");
  const std::string leaf = parts->back();
  parts->pop_back();
  std::string dir;
  for (const auto& p : *parts) dir += (dir.empty() ? "" : "/") + p;
  auto parent = OpenDirBeneath(root_fd, dir, /*create=*/false);
  if (!parent.ok()) return parent.status();
  int fd = openat(parent->get(), leaf.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return PermissionDenied("'" + std::string(rel) + "' is a symlink; refused");
    if (err == EEXIST) return AlreadyExists("'" + std::string(rel) + "' already exists");
    return Err("cannot open '" + std::string(rel) + "': " + Errno(err));
  }
  return UniqueFd(fd);
}

std::optional<std::string> RelativeBeneath(const std::string& path, const std::string& root) {
  if (root == "/") return path.substr(1);
  if (path == root) return std::string();
  if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
      path[root.size()] == '/') {
    return path.substr(root.size() + 1);
  }
  return std::nullopt;
}

Result<UniqueFd> OpenRootDir(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return PermissionDenied("'" + path + "' is a symlink; refused");
    return Err("cannot open directory '" + path + "': " + Errno(err));
  }
  return UniqueFd(fd);
}

Status CheckPrivateDir(int dir_fd, const std::string& what) {
  struct stat st {};
  if (fstat(dir_fd, &st) != 0) return Err(what + ": " + Errno(errno));
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(what + " is not a directory");
  if (st.st_uid != geteuid()) {
    return PermissionDenied(what + " is owned by uid " + std::to_string(st.st_uid) +
                            ", not by this process (uid " + std::to_string(geteuid()) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return PermissionDenied(what + " is writable by group or others (mode " + mode +
                            "); chmod go-w it");
  }
  return Status::Ok();
}

}  // namespace codl
