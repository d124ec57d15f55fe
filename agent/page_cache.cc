// victim.cache: see page_cache.h.
#include "agent/page_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "lib/common/safe_fs.h"
#include "lib/common/units.h"

namespace codl::agent {
namespace {

std::string RealPath(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> r(realpath(p.c_str(), nullptr), &std::free);
  return r ? std::string(r.get()) : std::string();
}

// "/a//b/./c/" -> "/a/b/c"; nullopt for a relative path or one with "..".
std::optional<std::string> Normalize(const std::string& p) {
  if (p.empty() || p.front() != '/') return std::nullopt;
  std::string out;
  size_t start = 1;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string::npos) slash = p.size();
    const std::string part = p.substr(start, slash - start);
    if (part == "..") return std::nullopt;
    if (!part.empty() && part != ".") out += "/" + part;
    start = slash + 1;
  }
  return out.empty() ? "/" : out;
}

const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file or directory";
}

struct Root {
  std::string configured;  // as the agent's configuration names it
  std::string real;        // realpath of it
  UniqueFd fd;
};

class CacheWalk {
 public:
  CacheWalk(const experiment::CacheSpec& spec, const CacheScope& scope,
            const std::atomic<bool>* cancel)
      : mode_(spec.mode),
        scope_(scope),
        cancel_(cancel),
        max_bytes_(scope.limits.max_bytes > 0 ? scope.limits.max_bytes : DefaultCacheMaxBytes()),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(scope.limits.max_seconds))) {}

  // Each configured root opened once (a configured root is trusted: its own symlinks resolve).
  void OpenRoots() {
    for (const auto& r : scope_.roots) {
      const std::string real = RealPath(r);
      if (real.empty()) continue;
      auto fd = OpenRootDir(real);
      if (!fd.ok()) continue;
      auto normalized = Normalize(r);
      roots_.push_back(Root{normalized.value_or(r), real, std::move(*fd)});
    }
  }

  Status Path(const std::string& p) {
    top_ = p;
    auto path = Normalize(p);
    if (!path) {
      return InvalidArgument("victim.cache.paths: " + p +
                             " must be an absolute path without '..' components");
    }
    for (const Root& root : roots_) {
      for (const std::string* form : {&root.configured, &root.real}) {
        if (auto rel = RelativeBeneath(*path, *form)) return Open(root, *rel);
      }
    }
    std::string list;
    for (const auto& root : scope_.roots) list += (list.empty() ? "" : ", ") + root;
    return PermissionDenied("victim.cache.paths: " + p +
                            " is outside this agent's scratch and cache roots (" + list +
                            "); add a cache_roots entry to the agent's configuration");
  }

  CacheReport report;

 private:
  // The path beneath `root`: its parent directory opened beneath the root's descriptor with no
  // symlink anywhere, then the last component handled like any directory entry.
  Status Open(const Root& root, const std::string& rel) {
    if (rel.empty()) {
      UniqueFd dup(fcntl(root.fd.get(), F_DUPFD_CLOEXEC, 0));
      if (!dup.valid()) return Err("victim.cache: " + std::string(std::strerror(errno)));
      struct stat st {};
      if (fstat(dup.get(), &st) != 0) return Err("victim.cache: cannot stat " + top_);
      if (Status s = CheckVictimMay(st, top_); !s.ok()) return s;
      return Directory(dup.get(), top_, 0);
    }
    const size_t slash = rel.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
    const std::string leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
    auto dir = OpenDirBeneath(root.fd.get(), parent, /*create=*/false);
    if (!dir.ok()) {
      if (dir.code() == StatusCode::kPermissionDenied) {
        return PermissionDenied("victim.cache.paths: " + top_ +
                                " crosses a symbolic link beneath " + root.configured +
                                "; a path an experiment names is resolved beneath its root "
                                "without following links (name the link's target)");
      }
      return Error{"victim.cache.paths: " + top_ + ": " + dir.error(), dir.status().code()};
    }
    return Entry(dir->get(), leaf, top_, 0, /*top=*/true);
  }

  // One name in the directory `dir_fd`. Under a path, what is not a regular file or directory,
  // vanished, or is not the victim's to read is skipped; the path itself must be one.
  Status Entry(int dir_fd, const std::string& name, const std::string& shown, int depth, bool top) {
    struct stat st {};
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (!top) return Status::Ok();
      const int err = errno;
      if (err == ENOENT) return NotFound("victim.cache.paths: " + shown + ": no such file");
      return Err("victim.cache.paths: " + shown + ": " + std::strerror(err));
    }
    const bool dir = S_ISDIR(st.st_mode);
    if (!dir && !S_ISREG(st.st_mode)) {
      if (!top) return Status::Ok();
      return InvalidArgument("victim.cache.paths: " + shown + " is " + KindOf(st.st_mode) +
                             "; only regular files and directories are prepared");
    }
    if (Status s = CheckVictimMay(st, shown); !s.ok()) return top ? s : Status::Ok();
    // O_NOFOLLOW: a name swapped for a symlink since fstatat fails (ELOOP) rather than being
    // followed; O_NONBLOCK | O_NOCTTY: one swapped for a FIFO or terminal cannot block or
    // become ours. The descriptor's own fstat decides what it is.
    const int flags =
        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (dir ? O_DIRECTORY : 0);
    UniqueFd fd(openat(dir_fd, name.c_str(), flags));
    if (!fd.valid()) {
      if (!top) return Status::Ok();
      const int err = errno;
      // ELOOP: the name became a symlink; ENOTDIR: a directory became a symlink or a file.
      if (err == ELOOP || (dir && err == ENOTDIR)) {
        return PermissionDenied("victim.cache.paths: " + shown +
                                " was replaced (by a symbolic link or another kind of file) "
                                "while it was opened; refused");
      }
      if (err == ENOENT) return NotFound("victim.cache.paths: " + shown + ": no such file");
      return Err("victim.cache.paths: cannot open " + shown + ": " + std::strerror(err));
    }
    struct stat now {};
    if (fstat(fd.get(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino ||
        (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT)) {
      if (!top) return Status::Ok();
      return PermissionDenied("victim.cache.paths: " + shown +
                              " was replaced while it was opened; refused");
    }
    return dir ? Directory(fd.get(), shown, depth) : File(fd.get(), now, shown);
  }

  Status Directory(int fd, const std::string& shown, int depth) {
    if (depth >= kMaxCacheDepth) {
      return InvalidArgument("victim.cache.paths: directories nest more than " +
                             std::to_string(kMaxCacheDepth) + " deep under " + top_);
    }
    const int listing = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (listing < 0) return Err("victim.cache: " + std::string(std::strerror(errno)));
    struct CloseDir {
      void operator()(DIR* d) const { closedir(d); }
    };
    std::unique_ptr<DIR, CloseDir> d(fdopendir(listing));
    if (!d) {
      close(listing);
      return Err("victim.cache.paths: cannot list " + shown + ": " + std::strerror(errno));
    }
    while (dirent* e = readdir(d.get())) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (Status s = Check(shown); !s.ok()) return s;
      if (Status s = Entry(fd, name, shown + "/" + name, depth + 1, false); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status File(int fd, const struct stat& st, const std::string& shown) {
    if (++report.files > kMaxCacheFiles) {
      return InvalidArgument("victim.cache.paths: more than " + std::to_string(kMaxCacheFiles) +
                             " files under " + top_ + ": name the dataset's directories");
    }
    const int64_t size = st.st_size;
    if (size > max_bytes_ - report.total_bytes) {
      return ResourceExhausted(
          "victim.cache.paths: " + shown + " is " + FormatSize(static_cast<double>(size)) +
          (report.total_bytes > 0
               ? " (after " + FormatSize(static_cast<double>(report.total_bytes)) +
                     " under the paths before it)"
               : "") +
          ", over this agent's cache_max_bytes of " + FormatSize(static_cast<double>(max_bytes_)) +
          "; name a smaller dataset, or raise cache_max_bytes in the agent's configuration");
    }
    report.total_bytes += size;
    if (size == 0) return Status::Ok();
    if (mode_ == "cold") {
      fdatasync(fd);  // dirty pages are not dropped: write them back first
      for (int64_t at = 0; at < size; at += kCacheWindowBytes) {
        if (Status s = Check(shown); !s.ok()) return s;
        posix_fadvise(fd, at, std::min(kCacheWindowBytes, size - at), POSIX_FADV_DONTNEED);
      }
    } else if (mode_ == "warm") {
      if (Status s = Warm(fd, size, shown); !s.ok()) return s;
    }
    return Resident(fd, size, shown);
  }

  Status Warm(int fd, int64_t size, const std::string& shown) {
    constexpr int64_t kCheckEvery = 64 << 20;
    buffer_.resize(1 << 20);
    int64_t next_check = 0;
    for (int64_t at = 0; at < size;) {
      if (at >= next_check) {
        if (Status s = Check(shown); !s.ok()) return s;
        next_check = at + kCheckEvery;
      }
      const ssize_t n = pread(fd, buffer_.data(), buffer_.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += n;
    }
    return Status::Ok();
  }

  // mincore over read-only mappings of one window at a time: the vector is one window's pages.
  Status Resident(int fd, int64_t size, const std::string& shown) {
    const int64_t page = sysconf(_SC_PAGESIZE);
    for (int64_t at = 0; at < size; at += kCacheWindowBytes) {
      if (Status s = Check(shown); !s.ok()) return s;
      const int64_t len = std::min(kCacheWindowBytes, size - at);
      void* map = mmap(nullptr, static_cast<size_t>(len), PROT_READ, MAP_SHARED, fd, at);
      if (map == MAP_FAILED) {
        return Err("victim.cache: cannot map " + shown + ": " + std::strerror(errno));
      }
      const size_t pages = static_cast<size_t>((len + page - 1) / page);
      pages_.resize(pages);
      const int rc = mincore(map, static_cast<size_t>(len), pages_.data());
      const int err = errno;
      munmap(map, static_cast<size_t>(len));
      if (rc != 0) return Err("victim.cache: mincore on " + shown + ": " + std::strerror(err));
      for (size_t i = 0; i < pages; ++i) {
        if (pages_[i] & 1) {
          report.resident_bytes += i + 1 == pages ? len - static_cast<int64_t>(i) * page : page;
        }
      }
    }
    return Status::Ok();
  }

  Status Check(const std::string& shown) const {
    if (cancel_ != nullptr && cancel_->load()) return Cancelled("victim.cache: cancelled");
    if (std::chrono::steady_clock::now() > deadline_) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", scope_.limits.max_seconds);
      return DeadlineExceeded("victim.cache: preparing " + top_ + " took longer than this " +
                              "agent's cache_max_time (" + limit + " s), at " + shown);
    }
    return Status::Ok();
  }

  // The victim's user could read it (a directory: read and search) by its mode bits, so the
  // agent's privileges never reach further than the victim's own.
  Status CheckVictimMay(const struct stat& st, const std::string& shown) const {
    if (!scope_.run_as || scope_.run_as->uid == 0) return Status::Ok();
    const RunAs& who = *scope_.run_as;
    const bool dir = S_ISDIR(st.st_mode);
    mode_t need = 0;
    if (st.st_uid == who.uid) {
      need = S_IRUSR | (dir ? S_IXUSR : 0);
    } else if (st.st_gid == who.gid ||
               std::find(who.groups.begin(), who.groups.end(), st.st_gid) != who.groups.end()) {
      need = S_IRGRP | (dir ? S_IXGRP : 0);
    } else {
      need = S_IROTH | (dir ? S_IXOTH : 0);
    }
    if ((st.st_mode & need) == need) return Status::Ok();
    return PermissionDenied("victim.cache.paths: " + shown + " is not readable by the victim's " +
                            "user (" + (who.user.empty() ? UserName(who.uid) : who.user) +
                            "); the agent prepares only what the victim could read itself");
  }

  const std::string mode_;
  const CacheScope& scope_;
  const std::atomic<bool>* cancel_;
  const int64_t max_bytes_;
  const std::chrono::steady_clock::time_point deadline_;
  std::vector<Root> roots_;
  std::string top_;  // the path of spec.paths being prepared
  std::vector<char> buffer_;
  std::vector<unsigned char> pages_;
};

}  // namespace

int64_t DefaultCacheMaxBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{64} << 30;
}

Result<CacheReport> PrepareCache(const experiment::CacheSpec& spec, const CacheScope& scope,
                                 const std::atomic<bool>* cancel) {
  CacheWalk walk(spec, scope, cancel);
  walk.OpenRoots();
  for (const std::string& p : spec.paths) {
    if (Status s = walk.Path(p); !s.ok()) return s;
  }
  return walk.report;
}

}  // namespace codl::agent
