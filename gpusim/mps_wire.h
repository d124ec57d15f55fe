// Where gpusim's MPS control daemon listens, shared by the daemon (mps_control.cc) and the
// CUDA runtime that joins it (runtime.cc).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace codl::gpusim {

inline std::string MpsPipeDir() {
  const char* d = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  return d != nullptr && *d != '\0' ? d : "/tmp/nvidia-mps";
}

// A connected socket to the daemon in `dir`, or -1.
inline int MpsConnect(const std::string& dir) {
  const std::string path = dir + "/control";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace codl::gpusim
