// What the two ends of an rdma pair tell each other to connect their RC queue pairs, as text.
//
// Rank 0 publishes its half through the controller's rendezvous (like net's endpoint, and with
// the same kind of token), rank 1 sends its half back over the token-authenticated TCP
// connection it opens to an address rank 0 published:
//   rendezvous value:  codl-rdma1 <token> <host:port>[,<host:port>...] <connection info>
//   connection info:   lid=<n> gid=<32 hex> mtu=<bytes> rkey=<hex> addr=<hex> len=<n>
//                      qps=<qpn>:<psn>[,<qpn>:<psn>...]
// gid is all zeros for an InfiniBand port addressed by LID only (no GRH); rkey/addr/len name the
// receiver's registered buffer (the target of the sender's RDMA WRITEs; zeros from a sender).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::rdma {

struct QpInfo {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits: the first packet sequence number this side sends
};

struct ConnInfo {
  uint16_t lid = 0;
  std::array<uint8_t, 16> gid{};
  int mtu = 0;  // path MTU in bytes: 256, 512, 1024, 2048 or 4096
  uint32_t rkey = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
  std::vector<QpInfo> qps;

  bool has_gid() const;  // false: all zeros (route by LID)
};

std::string EncodeConnInfo(const ConnInfo& c);
// Exact messages (tested): "rdma connection info: missing 'qps'", "rdma connection info: 'mtu':
// 300 is not 256, 512, 1024, 2048 or 4096", "rdma connection info: 'qps': 'x' is not
// <qpn>:<psn> with 24-bit numbers", "rdma connection info: unknown field 'foo'", ...
Result<ConnInfo> DecodeConnInfo(std::string_view text);

struct Endpoint {
  std::string token;                   // 32 lowercase hex characters (NewNetToken)
  std::vector<std::string> addresses;  // host:port to reach rank 0's TCP exchange, in order
  ConnInfo info;                       // rank 0's half
};

std::string EncodeEndpoint(const Endpoint& e);
// "not an rdma endpoint (expected 'codl-rdma1 <token> <host:port>,... <connection info>')",
// "rdma endpoint token must be 32 hex characters", or a connection-info message.
Result<Endpoint> DecodeEndpoint(std::string_view text);

// ibv_mtu's numbering (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5) <-> bytes; 0 / -1 when invalid.
int MtuBytes(int ibv_mtu);
int MtuEnum(int bytes);

}  // namespace codl::injectors::rdma
