#include "injectors/core/scratch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace codl::injectors {
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool Under(const std::string& path, const std::string& root) {
  return RelativeBeneath(path, root).has_value();
}

bool HasDotDot(const std::string& path) {
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part == "..") return true;
  }
  return false;
}

Result<std::string> RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) == nullptr) return Err("'" + p + "': " + Errno(errno));
  return std::string(buf);
}

std::string DescribeNonDirectory(const struct stat& st) {
  if (S_ISBLK(st.st_mode)) return "is a block device; codl-inject never writes to block devices";
  if (S_ISCHR(st.st_mode)) return "is a character device, not a directory";
  return "is not a directory";
}

// Removes everything inside the directory `dirfd` refers to, then nothing else. Never follows
// symlinks (a symlink is unlinked, not entered) and stays on device `dev`.
void RemoveContents(int dirfd, dev_t dev) {
  DIR* d = fdopendir(dup(dirfd));
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) continue;  // a mount point: leave it alone
      int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        RemoveContents(sub, dev);
        close(sub);
      }
      unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
    } else {
      unlinkat(dirfd, e->d_name, 0);
    }
  }
  closedir(d);
}

void RemoveContentsOf(int dirfd) {
  struct stat st;
  if (fstat(dirfd, &st) == 0) RemoveContents(dirfd, st.st_dev);
}

// Removes `parent_fd`/`name` (a directory) recursively and safely; true on success.
bool RemoveTreeAt(int parent_fd, const char* name) {
  int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  RemoveContentsOf(fd);
  close(fd);
  return unlinkat(parent_fd, name, AT_REMOVEDIR) == 0;
}

bool ProcessAlive(pid_t pid, uint64_t start_time) {
  auto t = ProcessStartTime(pid);
  return t.ok() && *t == start_time;
}

// Looks at one directory (an fd) for stale run dirs and recurses into its other directories
// (not into run dirs, symlinks or other filesystems) while depth allows.
void ScanForStale(int dirfd, const std::string& path, dev_t dev, int depth_left,
                  std::vector<std::string>* removed) {
  DIR* d = fdopendir(dup(dirfd));
  if (d == nullptr) return;
  std::vector<std::string> stale, subdirs;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_dev != dev) continue;  // symlinks, files, mounts: skip
    pid_t pid;
    uint64_t start;
    if (ParseRunDirName(name, &pid, &start)) {
      if (st.st_uid == geteuid() && !ProcessAlive(pid, start)) stale.push_back(name);
    } else if (depth_left > 1) {
      subdirs.push_back(name);
    }
  }
  closedir(d);
  for (const auto& name : stale) {
    if (RemoveTreeAt(dirfd, name.c_str())) removed->push_back(path + "/" + name);
  }
  for (const auto& name : subdirs) {
    int sub = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) continue;
    ScanForStale(sub, path + "/" + name, dev, depth_left - 1, removed);
    close(sub);
  }
}

}  // namespace

std::vector<std::string> DefaultScratchRoots(const std::vector<std::string>& flags) {
  if (!flags.empty()) return flags;
  std::vector<std::string> roots;
  if (const char* env = std::getenv("CODL_SCRATCH_ROOTS"); env != nullptr && *env != '\0') {
    std::stringstream ss(env);
    std::string part;
    while (std::getline(ss, part, ':')) {
      if (!part.empty()) roots.push_back(part);
    }
    if (!roots.empty()) return roots;
  }
  const char* tmp = std::getenv("TMPDIR");
  roots.emplace_back(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  return roots;
}

Result<std::vector<std::string>> ResolveScratchRoots(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& r : roots) {
    auto real = RealPath(r);
    if (!real.ok()) return Error{"scratch root " + real.error(), real.code()};
    struct stat st {};
    if (stat(real->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Err("scratch root '" + r + "' " + DescribeNonDirectory(st));
    }
    out.push_back(*real);
  }
  if (out.empty()) return Err("no scratch root");
  return out;
}

Result<std::string> ResolveScratchDir(const std::string& dir_in,
                                      const std::vector<std::string>& roots) {
  if (roots.empty()) return Err("no scratch root is configured");
  const std::string dir = dir_in.empty() ? roots.front() : dir_in;
  if (dir.front() != '/') return Err("dir '" + dir + "' must be an absolute path");
  if (HasDotDot(dir)) return Err("dir '" + dir + "' contains '..'; refused");

  // Find the longest existing ancestor; everything below it will be created by us.
  std::string existing = dir;
  std::vector<std::string> missing;
  struct stat st;
  while (lstat(existing.c_str(), &st) != 0) {
    if (errno != ENOENT) return Err("dir '" + dir + "': " + Errno(errno));
    const size_t slash = existing.find_last_of('/');
    std::string leaf = existing.substr(slash + 1);
    if (!leaf.empty() && leaf != ".") missing.insert(missing.begin(), leaf);
    existing = slash == 0 ? "/" : existing.substr(0, slash);
  }
  auto real = RealPath(existing);
  if (!real.ok()) return Error{"dir " + real.error(), real.code()};
  if (stat(real->c_str(), &st) != 0) return Err("dir '" + dir + "': " + Errno(errno));
  if (!S_ISDIR(st.st_mode)) return Err("dir '" + existing + "' " + DescribeNonDirectory(st));
  bool inside = false;
  for (const auto& root : roots) inside = inside || Under(*real, root);
  if (!inside) {
    return Err("dir '" + dir + "' resolves to '" + *real +
               "', which is outside the scratch roots [" + Join(roots) +
               "] (add one with --scratch-root or CODL_SCRATCH_ROOTS)");
  }
  std::string path = *real;
  for (const auto& leaf : missing) {
    path += (path == "/" ? "" : "/") + leaf;
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Err("cannot create dir '" + path + "': " + Errno(errno));
    }
  }
  // Re-check after creation: a racing symlink must not move us outside.
  auto final_real = RealPath(path);
  if (!final_real.ok()) return Error{"dir " + final_real.error(), final_real.code()};
  inside = false;
  for (const auto& root : roots) inside = inside || Under(*final_real, root);
  if (!inside) return Err("dir '" + dir + "' escaped the scratch roots; refused");
  return *final_real;
}

namespace {
// The longest of `roots` that `dir` lies under (by name), or null.
const std::string* RootOf(const std::string& dir, const std::vector<std::string>& roots) {
  const std::string* best = nullptr;
  for (const auto& root : roots) {
    if (Under(dir, root) && (best == nullptr || root.size() > best->size())) best = &root;
  }
  return best;
}

// `dir` relative to `root` ("" for the root itself).
std::string Beneath(const std::string& dir, const std::string& root) {
  std::string rel = dir.substr(root == "/" ? 1 : root.size());
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return rel;
}
}  // namespace

Status MakePrivateDirBeneath(const std::string& dir, const std::vector<std::string>& roots,
                             mode_t mode) {
  if (dir.empty() || dir.front() != '/') return Err("'" + dir + "' must be an absolute path");
  if (HasDotDot(dir)) return Err("'" + dir + "' contains '..'; refused");
  const std::string* root = RootOf(dir, roots);
  if (root == nullptr) {
    return Err("'" + dir + "' is outside the scratch roots [" + Join(roots) + "]");
  }
  auto root_fd = OpenRootDir(*root);
  if (!root_fd.ok()) return root_fd.status().WithContext("scratch root");
  auto fd = OpenDirBeneath(root_fd->get(), Beneath(dir, *root), /*create=*/true, mode);
  if (!fd.ok()) return fd.status().WithContext("'" + dir + "'");
  return CheckPrivateDir(fd->get(), "'" + dir + "'");
}

Result<uint64_t> ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return Err("no process " + std::to_string(pid));
  // Field 2 (comm) is in parentheses and may contain spaces or ')': parse after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return Err("unparsable /proc stat");
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return Err("unparsable /proc stat");
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

std::string RunDirName(pid_t pid, uint64_t start_time) {
  return "codl-inject." + std::to_string(pid) + "." + std::to_string(start_time);
}

bool ParseRunDirName(const std::string& name, pid_t* pid, uint64_t* start_time) {
  static const std::string kPrefix = "codl-inject.";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  const std::string rest = name.substr(kPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot + 1 == rest.size()) return false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (i != dot && (rest[i] < '0' || rest[i] > '9')) return false;
  }
  if (dot > 9 || rest.size() - dot - 1 > 19) return false;  // pid fits int, start fits u64
  *pid = static_cast<pid_t>(std::strtol(rest.substr(0, dot).c_str(), nullptr, 10));
  *start_time = std::strtoull(rest.substr(dot + 1).c_str(), nullptr, 10);
  return *pid > 0;
}

Result<RunDir> RunDir::Create(const std::string& parent) {
  auto fd = OpenRootDir(parent);
  if (!fd.ok()) return fd.status().WithContext("run dir parent");
  return CreateIn(std::move(fd.value()), parent);
}

Result<RunDir> RunDir::CreateBeneath(const std::string& dir,
                                     const std::vector<std::string>& roots) {
  const std::string* best = RootOf(dir, roots);
  if (best == nullptr) return Err("dir '" + dir + "' is outside the scratch roots");
  auto root_fd = OpenRootDir(*best);
  if (!root_fd.ok()) return root_fd.status().WithContext("scratch root");
  auto parent = OpenDirBeneath(root_fd->get(), Beneath(dir, *best), /*create=*/true);
  if (!parent.ok()) return parent.status().WithContext("dir '" + dir + "'");
  return CreateIn(std::move(parent.value()), dir);
}

Result<RunDir> RunDir::CreateIn(UniqueFd parent, const std::string& parent_path) {
  auto start = ProcessStartTime(getpid());
  if (!start.ok()) return start.status().WithContext("cannot read /proc/self/stat");
  RunDir run;
  run.name_ = RunDirName(getpid(), *start);
  run.path_ = parent_path + "/" + run.name_;
  // mkdir (not mkdir -p): the directory must be new, so nobody else's files or symlinks are in it.
  if (mkdirat(parent.get(), run.name_.c_str(), 0700) != 0) {
    return Err("cannot create run dir '" + run.path_ + "': " + Errno(errno));
  }
  run.fd_ =
      openat(parent.get(), run.name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (run.fd_ < 0) {
    const int err = errno;
    unlinkat(parent.get(), run.name_.c_str(), AT_REMOVEDIR);
    return Err("cannot open run dir '" + run.path_ + "': " + Errno(err));
  }
  run.parent_ = std::move(parent);
  return run;
}

RunDir::RunDir(RunDir&& other) noexcept
    : path_(std::move(other.path_)),
      name_(std::move(other.name_)),
      parent_(std::move(other.parent_)),
      fd_(other.fd_) {
  other.fd_ = -1;
  other.path_.clear();
}

RunDir& RunDir::operator=(RunDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    name_ = std::move(other.name_);
    parent_ = std::move(other.parent_);
    fd_ = other.fd_;
    other.fd_ = -1;
    other.path_.clear();
  }
  return *this;
}

RunDir::~RunDir() { Remove(); }

void RunDir::Remove() {
  if (fd_ < 0) return;
  RemoveContentsOf(fd_);
  close(fd_);
  fd_ = -1;
  // By the parent's descriptor, not the name: the path may have been re-pointed meanwhile.
  unlinkat(parent_.get(), name_.c_str(), AT_REMOVEDIR);
  parent_.reset();
  path_.clear();
}

Result<std::vector<std::string>> CleanupStale(const std::vector<std::string>& roots) {
  std::vector<std::string> removed;
  for (const auto& root : roots) {
    int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Err("cannot read scratch root '" + root + "': " + Errno(errno));
    struct stat st;
    if (fstat(fd, &st) == 0) ScanForStale(fd, root, st.st_dev, kMaxCleanupDepth, &removed);
    close(fd);
  }
  return removed;
}

}  // namespace codl::injectors
