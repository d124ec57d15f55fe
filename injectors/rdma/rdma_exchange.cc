#include "injectors/rdma/rdma_exchange.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "injectors/net/net_socket.h"
#include "lib/common/units.h"

namespace codl::injectors::rdma {
namespace {

constexpr size_t kMaxLine = 8192;  // 64 QPs' connection info is ~1.2 KB
constexpr int kAnswerMs = 10000;   // a peer that connected answers within this

// The token-holder on fd sent its half: connect to it and settle who is ready.
Status Settle(int fd, const StopToken& stop, const ConnectFn& connect) {
  auto remote = DecodeConnInfo(ReadLine(fd, kMaxLine, kAnswerMs, &stop));
  if (!remote.ok()) return remote.status().WithContext("rdma: rank 1's connection info");
  if (Status s = connect(*remote); !s.ok()) {
    WriteAll(fd, "error " + s.error() + "\n");
    return s;
  }
  if (!WriteAll(fd, "ready\n") || ReadLine(fd, kMaxLine, kAnswerMs, &stop) != "ready") {
    return Err("rdma: rank 1 did not confirm its queue pairs (it failed or went away)");
  }
  return Status::Ok();
}

}  // namespace

Result<int> AcceptRank1(int listen_fd, const std::string& token, double timeout_s,
                        const StopToken& stop, const ConnectFn& connect) {
  const StopToken wait = stop.WithDeadline(timeout_s);
  for (;;) {
    if (wait.stop_requested()) {
      if (stop.stop_requested()) return Err("stopped during setup");
      return Err("rdma: rank 1 did not connect within connect_timeout (" +
                 FormatDuration(timeout_s) + ")");
    }
    if (!WaitFd(listen_fd, POLLIN)) continue;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (!AnswerToken(fd, token, &stop)) {
      close(fd);
      continue;
    }
    if (Status s = Settle(fd, stop, connect); !s.ok()) {
      close(fd);
      return s;
    }
    return fd;
  }
}

Result<int> JoinRank0(const Endpoint& rank0, const ConnInfo& local, const ConnectFn& connect,
                      std::string* peer) {
  std::string tried;
  int fd = -1;
  for (const auto& addr : rank0.addresses) {
    std::string why;
    fd = ConnectVerified(addr, rank0.token, &why);
    if (fd >= 0) {
      *peer = addr;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + why;
  }
  if (fd < 0) return Err("rdma: no address of rank 0 answered: " + tried);
  auto fail = [fd](const std::string& why) {
    close(fd);
    return Err(why);
  };
  if (!WriteAll(fd, EncodeConnInfo(local) + "\n")) {
    return fail("rdma: rank 0 at " + *peer + ": cannot send the connection info");
  }
  const std::string answer = ReadLine(fd, kMaxLine, kAnswerMs, nullptr);
  if (answer.rfind("error ", 0) == 0) return fail("rdma: rank 0 refused: " + answer.substr(6));
  if (answer != "ready") {
    return fail("rdma: rank 0 at " + *peer + " did not answer (it failed or went away)");
  }
  if (Status s = connect(rank0.info); !s.ok()) return fail(s.error());
  if (!WriteAll(fd, "ready\n")) return fail("rdma: rank 0 at " + *peer + " went away");
  return fd;
}

}  // namespace codl::injectors::rdma
