#include "agent/scratch_roots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "lib/common/safe_fs.h"

namespace codl::agent {
namespace {

// mkdir -p: each missing component made with `parent_mode`, the last with `mode`.
Status MakeDirs(const std::string& path, mode_t parent_mode, mode_t mode) {
  size_t at = 1;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    const std::string prefix = path.substr(0, slash);
    const bool last = slash == path.size();
    if (mkdir(prefix.c_str(), last ? mode : parent_mode) != 0 && errno != EEXIST) {
      return Err("cannot create " + prefix + ": " + std::strerror(errno));
    }
    at = slash + 1;
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> PrivateScratchRoot(bool system) {
  std::string dir;
  if (system) {
    dir = "/var/lib/codl/scratch";
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    dir = std::string(xdg) + "/codl/scratch";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    dir = std::string(home) + "/.cache/codl/scratch";
  } else {
    return FailedPrecondition(
        "no scratch root: HOME is not set; give one with --scratch-root or CODL_SCRATCH_ROOTS");
  }
  if (Status s = MakeDirs(dir, system ? 0755 : 0700, 0711); !s.ok()) {
    return s.WithContext("the default scratch root");
  }
  auto fd = OpenRootDir(dir);
  if (!fd.ok()) return fd.status().WithContext("the default scratch root");
  if (Status s = CheckPrivateDir(fd->get(), "the default scratch root " + dir); !s.ok()) return s;
  return dir;
}

Result<std::vector<std::string>> ScratchRootsOrDefault(const std::vector<std::string>& configured,
                                                       bool system) {
  if (!configured.empty()) return configured;
  std::vector<std::string> roots;
  if (const char* env = std::getenv("CODL_SCRATCH_ROOTS"); env != nullptr && *env != '\0') {
    std::stringstream ss(env);
    for (std::string root; std::getline(ss, root, ':');) {
      if (!root.empty()) roots.push_back(root);
    }
    if (!roots.empty()) return roots;
  }
  auto dir = PrivateScratchRoot(system);
  if (!dir.ok()) return dir.status();
  return std::vector<std::string>{*dir};
}

std::vector<std::string> WorldWritableRootWarnings(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& root : roots) {
    struct stat st {};
    if (stat(root.c_str(), &st) != 0 || (st.st_mode & S_IWOTH) == 0) continue;
    out.push_back("scratch root " + root +
                  " is writable by every user: others can place files where injectors write and "
                  "victims keep their HOME (paths in it are still resolved without following "
                  "links); prefer a private directory such as /var/lib/codl/scratch");
  }
  return out;
}

}  // namespace codl::agent
