// nvidia-cuda-mps-control for a gpusim node: the control daemon's lifecycle and the commands
// CoDL's MPS co-tenant sends, on the same socket path as the real one ($CUDA_MPS_PIPE_DIRECTORY/
// control, default /tmp/nvidia-mps). Tests put <build>/gpusim/bin first on PATH.
//   nvidia-cuda-mps-control -d     start the daemon (returns once it listens)
//   echo CMD | nvidia-cuda-mps-control
//       get_server_list, get_client_list PID, set_default_active_thread_percentage P,
//       get_default_active_thread_percentage, quit
// gpusim's CUDA runtime joins the daemon found in its CUDA_MPS_PIPE_DIRECTORY when it starts
// ("client PID"): from then on its kernels weigh CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (or the
// daemon's default) / 100 on the SMs (node.h). The server is the daemon itself (its PID).
// The daemon ends on quit, or after CODL_GPUSIM_MPS_MAX_S seconds (default 600): a test that
// dies leaves no daemon behind for long.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "gpusim/mps_wire.h"

namespace {

using codl::gpusim::MpsConnect;
using codl::gpusim::MpsPipeDir;

std::string LogDir() {
  const char* d = std::getenv("CUDA_MPS_LOG_DIRECTORY");
  return d != nullptr && *d != '\0' ? d : "/var/log/nvidia-mps";
}

void Log(const std::string& line) {
  std::ofstream(LogDir() + "/control.log", std::ios::app) << "[gpusim] " << line << "\n";
}

bool Alive(long pid) {
  return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

std::string ReadLine(int fd) {
  std::string s;
  char c;
  while (s.size() < 256 && read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = write(fd, s.data() + off, s.size() - off);
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

int Serve(int listener, const std::string& path) {
  std::set<long> clients;
  int percent = 100;
  double max_s = 600;
  if (const char* m = std::getenv("CODL_GPUSIM_MPS_MAX_S")) max_s = std::atof(m);
  const time_t end = time(nullptr) + static_cast<time_t>(max_s);
  signal(SIGPIPE, SIG_IGN);  // a client that hung up must not end the daemon
  Log("daemon started, pid " + std::to_string(getpid()));
  while (time(nullptr) < end) {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    const int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    timeval tv{2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string cmd = ReadLine(c);
    if (cmd.rfind("client ", 0) != 0) Log("command: " + cmd);
    for (auto it = clients.begin(); it != clients.end();)
      it = Alive(*it) ? std::next(it) : clients.erase(it);
    std::string reply;
    if (cmd.rfind("client ", 0) == 0) {
      const long pid = std::atol(cmd.c_str() + 7);
      if (pid > 0) clients.insert(pid);
      Log("client " + std::to_string(pid) + " joined");
      reply = "ok " + std::to_string(percent) + "\n";
    } else if (cmd == "get_server_list") {
      if (!clients.empty()) reply = std::to_string(getpid()) + "\n";
    } else if (cmd.rfind("get_client_list ", 0) == 0) {
      if (std::atol(cmd.c_str() + 16) == getpid()) {
        for (long pid : clients) reply += std::to_string(pid) + "\n";
      }
    } else if (cmd.rfind("set_default_active_thread_percentage ", 0) == 0) {
      const int v = std::atoi(cmd.c_str() + 37);
      if (v < 1 || v > 100) {
        reply = "ERR invalid percentage\n";
      } else {
        percent = v;
        reply = std::to_string(v) + ".0\n";
      }
    } else if (cmd == "get_default_active_thread_percentage") {
      reply = std::to_string(percent) + ".0\n";
    } else if (cmd == "quit") {
      Log("quit");
      close(c);
      break;
    } else {
      reply = "ERR unknown command '" + cmd + "'\n";
    }
    WriteAll(c, reply);
    close(c);
  }
  unlink(path.c_str());
  close(listener);
  return 0;
}

int StartDaemon() {
  const std::string dir = MpsPipeDir();
  mkdir(dir.c_str(), 0755);
  mkdir(LogDir().c_str(), 0755);
  const std::string path = dir + "/control";
  if (int probe = MpsConnect(dir); probe >= 0) {
    close(probe);
    std::fprintf(stderr, "An instance of this daemon is already running\n");
    return 1;
  }
  unlink(path.c_str());  // a socket left by a dead daemon
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "%s: path too long for a socket\n", path.c_str());
    return 1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 16) != 0) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  // The parent returns once the child has left this session: whoever ran `-d` may kill what is
  // left of its process group when it returns.
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child > 0) {
    close(ready[1]);
    char b;
    const bool ok = read(ready[0], &b, 1) == 1;
    return ok ? 0 : 1;  // listening already: the caller may connect
  }
  close(ready[0]);
  setsid();
  if (write(ready[1], "r", 1) != 1) _exit(1);
  close(ready[1]);
  const int null = open("/dev/null", O_RDWR);
  for (int i = 0; i < 3; ++i) dup2(null, i);
  for (int i = 3; i < 1024; ++i) {
    if (i != fd) close(i);
  }
  _exit(Serve(fd, path));
}

int Client() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const int fd = MpsConnect(MpsPipeDir());
    if (fd < 0) {
      std::fprintf(stderr, "Cannot find MPS control daemon process\n");
      return 1;
    }
    WriteAll(fd, line + "\n");
    std::string reply;
    char buf[512];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
    close(fd);
    std::fputs(reply.c_str(), stdout);
    if (reply.rfind("ERR", 0) == 0) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "-d") == 0) return StartDaemon();
  if (argc == 1) return Client();
  std::fprintf(stderr, "usage: nvidia-cuda-mps-control [-d]   (gpusim stand-in)\n");
  return 2;
}
