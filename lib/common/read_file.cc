#include "lib/common/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace codl {

std::optional<std::string> ReadFileText(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || out.size() + static_cast<size_t>(n) > max_bytes) {
      const int saved = n < 0 ? errno : EFBIG;  // for the caller's strerror(errno)
      close(fd);
      errno = saved;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace codl
