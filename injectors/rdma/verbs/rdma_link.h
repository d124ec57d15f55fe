// The verbs objects of the rdma flood, each released by its destructor in the order verbs
// requires (QPs, then CQs, then the MR, then the PD, the completion channels, the device), so a
// stop, a SIGTERM (codl-inject turns it into a stop) and every error path leave nothing behind.
// Built only with libibverbs-dev's header; the library itself is dlopen'ed (verbs_loader.h).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

#include "injectors/rdma/rdma_host.h"
#include "injectors/rdma/rdma_wire.h"
#include "lib/common/result.h"

namespace codl::injectors::rdma {

struct FloodShape {
  bool write = true;  // RDMA WRITE with immediate; false: SEND
  size_t block = 64 * 1024;
  int queue_depth = 16;  // sender: WRs in flight per QP
  int connections = 1;   // QPs
};

// An open port: device context, protection domain and one completion channel per worker (the
// CQs a worker polls raise their events on its channel, so it sleeps in one ppoll).
class Device {
 public:
  // Opens port.device; the port must be active. gid_index: the option (-1 = choose, ChooseGid).
  static Result<std::unique_ptr<Device>> Open(const Port& port, int gid_index, int channels);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  ibv_comp_channel* channel(int i) const { return channels_[i]; }
  const Port& port() const { return port_; }
  int gid_index() const { return gid_index_; }  // -1: no GRH (InfiniBand, by LID)
  const std::array<uint8_t, 16>& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  int mtu() const { return mtu_; }  // active MTU in bytes
  uint32_t max_msg() const { return max_msg_; }
  std::string Describe() const;  // "rxe0 port 1 (Ethernet, GID index 1 RoCE v2, MTU 1024)"

  // Waits up to `seconds` for a completion event on channel i (acked, its CQ re-armed) or for
  // extra_fd (when >= 0) to become readable; true when extra_fd is readable.
  bool Wait(int i, double seconds, int extra_fd) const;

 private:
  Device() = default;
  Port port_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::vector<ibv_comp_channel*> channels_;
  int gid_index_ = -1;
  std::string gid_type_;
  std::array<uint8_t, 16> gid_{};
  uint16_t lid_ = 0;
  int mtu_ = 0;
  uint32_t max_msg_ = 0;
};

// One end of the flood: one registered buffer of `block` bytes and `connections` RC QPs, QP i
// with its own CQ on the device's channel i. The receiver's buffer is what the sender's WRITEs
// land in (remote write access) or its SENDs are received into; the receiver keeps
// 2 x queue_depth receives posted per QP (RDMA WRITE with immediate consumes one each, which
// is what lets the receiver count what arrived) and the QPs retry on receiver-not-ready
// indefinitely, so a receiver that falls behind slows the sender instead of failing it.
class Side {
 public:
  static Result<std::unique_ptr<Side>> Create(Device& device, bool receiver,
                                              const FloodShape& shape);
  ~Side();
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;

  bool receiver() const { return receiver_; }
  ConnInfo Local() const;
  // INIT -> RTR -> RTS towards the peer's QPs (QP i to the peer's QP i).
  Status Connect(const ConnInfo& remote);
  // Sender: one block on QP i (signaled). Receiver: one receive on QP i.
  Status Post(int i);
  // Takes up to 32 completions of QP i: how many succeeded, or the first failure in words
  // ("QP 0: transport retry counter exceeded (status 12, vendor error 0x81)").
  Result<int> Reap(int i);

 private:
  Side(Device& device, bool receiver, const FloodShape& shape)
      : dev_(device), receiver_(receiver), shape_(shape) {}
  Status Init();
  Device& dev_;
  const bool receiver_;
  const FloodShape shape_;
  void* buffer_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<ibv_cq*> cqs_;
  std::vector<ibv_qp*> qps_;
  std::vector<uint32_t> psns_;
  ConnInfo remote_;
};

}  // namespace codl::injectors::rdma
