// victim.cache: see page_cache.h.
#include "agent/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

namespace codl::agent {
namespace {

namespace fs = std::filesystem;

std::string RealPath(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> r(realpath(p.c_str(), nullptr), &std::free);
  return r ? std::string(r.get()) : std::string();
}

bool Inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

// One file: the mode applied, then its resident bytes (mincore over a read-only mapping).
Status Visit(const std::string& path, const std::string& mode, CacheReport* r) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Err("victim.cache: cannot open " + path + ": " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  const off_t size = lseek(fd, 0, SEEK_END);
  if (size < 0) return Err("victim.cache: cannot size " + path + ": " + std::strerror(errno));
  ++r->files;
  r->total_bytes += size;
  if (size == 0) return Status::Ok();
  if (mode == "cold") {
    fdatasync(fd);  // dirty pages are not dropped: write them back first
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  } else if (mode == "warm") {
    std::vector<char> buf(1 << 20);
    for (off_t at = 0; at < size;) {
      const ssize_t n = pread(fd, buf.data(), buf.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += n;
    }
  }
  void* map = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    return Err("victim.cache: cannot map " + path + ": " + std::strerror(errno));
  const long page = sysconf(_SC_PAGESIZE);
  const size_t pages = (static_cast<size_t>(size) + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  const int rc = mincore(map, static_cast<size_t>(size), vec.data());
  munmap(map, static_cast<size_t>(size));
  if (rc != 0) return Err("victim.cache: mincore on " + path + ": " + std::strerror(errno));
  int64_t resident = 0;
  for (size_t i = 0; i < pages; ++i) {
    if (vec[i] & 1) resident += (i + 1 == pages) ? size - static_cast<off_t>(i) * page : page;
  }
  r->resident_bytes += resident;
  return Status::Ok();
}

}  // namespace

Result<CacheReport> PrepareCache(const experiment::CacheSpec& spec,
                                 const std::vector<std::string>& roots) {
  CacheReport r;
  std::vector<std::string> real_roots;
  for (const auto& root : roots) {
    if (std::string real = RealPath(root); !real.empty()) real_roots.push_back(real);
  }
  for (const std::string& p : spec.paths) {
    const std::string real = RealPath(p);
    if (real.empty()) {
      return NotFound("victim.cache.paths: " + p + ": " + std::strerror(errno));
    }
    bool allowed = false;
    for (const auto& root : real_roots) allowed |= Inside(real, root);
    if (!allowed) {
      std::string list;
      for (const auto& root : roots) list += (list.empty() ? "" : ", ") + root;
      return PermissionDenied("victim.cache.paths: " + p +
                              (real == p ? "" : " (resolves to " + real + ")") +
                              " is outside this agent's scratch and cache roots (" + list +
                              "); add a cache_roots entry to the agent's configuration");
    }
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(real, ec);
    if (fs::is_regular_file(st)) {
      if (Status s = Visit(real, spec.mode, &r); !s.ok()) return Error{s.message(), s.code()};
      continue;
    }
    // Symbolic links below the path are neither followed nor counted: nothing outside it.
    for (auto it = fs::recursive_directory_iterator(
             real, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
      if (r.files >= kMaxCacheFiles) {
        return InvalidArgument("victim.cache.paths: more than " + std::to_string(kMaxCacheFiles) +
                               " files under " + p + ": name the dataset's directories");
      }
      if (Status s = Visit(it->path().string(), spec.mode, &r); !s.ok())
        return Error{s.message(), s.code()};
    }
    if (ec) return Err("victim.cache.paths: cannot list " + p + ": " + ec.message());
  }
  return r;
}

}  // namespace codl::agent
