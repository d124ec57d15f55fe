#include "injectors/rdma/verbs/rdma_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "injectors/rdma/verbs/verbs_loader.h"

namespace codl::injectors::rdma {
namespace {

using rdma_loaders::Verbs;

std::string Why(const std::string& what, int err) {
  return "rdma: " + what + ": " + std::strerror(err);
}

const char* StateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

// A 24-bit packet sequence number, random so a stale packet of an earlier QP is not taken.
uint32_t RandomPsn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffff;
}

}  // namespace

Result<std::unique_ptr<Device>> Device::Open(const Port& port, int gid_index, int channels) {
  const auto& v = Verbs();
  if (!v.error.empty()) return Err("rdma: " + v.error);
  std::unique_ptr<Device> d(new Device());
  d->port_ = port;
  int n = 0;
  ibv_device** list = v.get_device_list(&n);
  if (list == nullptr) return Err(Why("ibv_get_device_list", errno));
  bool listed = false;
  for (int i = 0; i < n && !listed; ++i) {
    listed = port.device == v.get_device_name(list[i]);
    if (listed) d->ctx_ = v.open_device(list[i]);
  }
  const int open_errno = errno;
  v.free_device_list(list);
  if (!listed) return Err("rdma: libibverbs does not list " + port.device);
  if (d->ctx_ == nullptr) return Err(Why("ibv_open_device(" + port.device + ")", open_errno));

  ibv_port_attr attr;
  if (int rc = v.QueryPort(d->ctx_, static_cast<uint8_t>(port.port), &attr); rc != 0) {
    return Err(Why("ibv_query_port(" + port.Name() + ")", rc));
  }
  if (attr.state != IBV_PORT_ACTIVE) {
    return Err("rdma: " + port.Name() + " is " + StateName(attr.state) + ", not ACTIVE");
  }
  d->lid_ = attr.lid;
  d->mtu_ = MtuBytes(attr.active_mtu);
  d->max_msg_ = attr.max_msg_sz;
  Port as_seen = port;
  as_seen.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
  auto gid = ChooseGid(ReadGids(kSysfsRoot, as_seen), as_seen, gid_index);
  if (!gid.ok()) return gid.status();
  d->gid_index_ = *gid;
  if (d->gid_index_ >= 0) {
    ibv_gid g;
    if (v.query_gid(d->ctx_, static_cast<uint8_t>(port.port), d->gid_index_, &g) != 0) {
      return Err(Why("ibv_query_gid(" + port.Name() + ", " + std::to_string(*gid) + ")", errno));
    }
    std::memcpy(d->gid_.data(), g.raw, 16);
    for (const auto& e : ReadGids(kSysfsRoot, as_seen)) {
      if (e.index == d->gid_index_) d->gid_type_ = e.type;
    }
  }
  d->port_ = as_seen;
  d->pd_ = v.alloc_pd(d->ctx_);
  if (d->pd_ == nullptr) return Err(Why("ibv_alloc_pd", errno));
  for (int i = 0; i < channels; ++i) {
    ibv_comp_channel* ch = v.create_comp_channel(d->ctx_);
    if (ch == nullptr) return Err(Why("ibv_create_comp_channel", errno));
    d->channels_.push_back(ch);
    // Non-blocking: Wait() polls it with a timeout so a stop is seen within 50 ms.
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  }
  return d;
}

Device::~Device() {
  const auto& v = Verbs();
  for (auto* ch : channels_) v.destroy_comp_channel(ch);
  if (pd_ != nullptr) v.dealloc_pd(pd_);
  if (ctx_ != nullptr) v.close_device(ctx_);
}

std::string Device::Describe() const {
  std::string gid = gid_index_ < 0 ? "LID " + std::to_string(lid_)
                                   : "GID index " + std::to_string(gid_index_) +
                                         (gid_type_.empty() ? "" : " " + gid_type_);
  return port_.Name() + " (" + port_.link_layer + ", " + gid + ", MTU " + std::to_string(mtu_) +
         ")";
}

bool Device::Wait(int i, double seconds, int extra_fd) const {
  const auto& v = Verbs();
  pollfd fds[2] = {{channels_[i]->fd, POLLIN, 0}, {extra_fd, POLLIN, 0}};
  const double s = std::clamp(seconds, 0.0, 0.05);
  timespec ts{0, static_cast<long>(s * 1e9)};
  if (ppoll(fds, extra_fd >= 0 ? 2 : 1, &ts, nullptr) <= 0) return false;
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  while (v.get_cq_event(channels_[i], &cq, &cq_context) == 0) {
    v.ack_cq_events(cq, 1);
    ibv_req_notify_cq(cq, 0);
  }
  return extra_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

Result<std::unique_ptr<Side>> Side::Create(Device& device, bool receiver, const FloodShape& shape) {
  std::unique_ptr<Side> s(new Side(device, receiver, shape));
  if (Status st = s->Init(); !st.ok()) return st;
  return s;
}

Status Side::Init() {
  const auto& v = Verbs();
  if (shape_.block > dev_.max_msg()) {
    return Err("option 'block': " + std::to_string(shape_.block) + " bytes is more than " +
               dev_.port().Name() + " sends in one message (" + std::to_string(dev_.max_msg()) +
               ")");
  }
  const size_t bytes = (shape_.block + 4095) / 4096 * 4096;
  buffer_ = std::aligned_alloc(4096, bytes);
  if (buffer_ == nullptr) return Err("rdma: cannot allocate " + std::to_string(bytes) + " bytes");
  std::memset(buffer_, 0x5a, bytes);
  const int access = receiver_ ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
  mr_ = v.reg_mr(dev_.pd(), buffer_, bytes, access);
  if (mr_ == nullptr) {
    const int e = errno;
    return Err(Why("ibv_reg_mr of " + std::to_string(bytes) + " bytes", e) +
               (e == ENOMEM || e == EPERM
                    ? " (pinned memory is limited by RLIMIT_MEMLOCK: raise `ulimit -l`, or run "
                      "the container with IPC_LOCK)"
                    : ""));
  }
  const int send_wr = receiver_ ? 1 : shape_.queue_depth;
  const int recv_wr = receiver_ ? 2 * shape_.queue_depth : 1;
  for (int i = 0; i < shape_.connections; ++i) {
    ibv_cq* cq = v.create_cq(dev_.context(), send_wr + recv_wr, nullptr, dev_.channel(i), 0);
    if (cq == nullptr) return Err(Why("ibv_create_cq", errno));
    cqs_.push_back(cq);
    if (int rc = ibv_req_notify_cq(cq, 0); rc != 0) return Err(Why("ibv_req_notify_cq", rc));
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.cap.max_send_wr = static_cast<uint32_t>(send_wr);
    init.cap.max_recv_wr = static_cast<uint32_t>(recv_wr);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.qp_type = IBV_QPT_RC;
    ibv_qp* qp = v.create_qp(dev_.pd(), &init);
    if (qp == nullptr) {
      return Err(Why("ibv_create_qp (RC, " + std::to_string(send_wr) + " send / " +
                         std::to_string(recv_wr) + " receive WRs; queue_depth too large?)",
                     errno));
    }
    qps_.push_back(qp);
    psns_.push_back(RandomPsn());
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = static_cast<uint8_t>(dev_.port().port);
    a.qp_access_flags = receiver_ ? IBV_ACCESS_REMOTE_WRITE : 0;  // what the peer may do
    if (int rc = v.modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        rc != 0) {
      return Err(Why("ibv_modify_qp(INIT)", rc));
    }
    // Receives may be posted from INIT on; they must be there before the peer sends.
    for (int r = 0; receiver_ && r < recv_wr; ++r) {
      if (Status st = Post(i); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

Side::~Side() {
  const auto& v = Verbs();
  for (auto* qp : qps_) v.destroy_qp(qp);
  for (auto* cq : cqs_) v.destroy_cq(cq);  // every event was acked in Device::Wait
  if (mr_ != nullptr) v.dereg_mr(mr_);
  std::free(buffer_);
}

ConnInfo Side::Local() const {
  ConnInfo c;
  c.lid = dev_.lid();
  if (dev_.gid_index() >= 0) c.gid = dev_.gid();
  c.mtu = dev_.mtu();
  if (receiver_) {
    c.rkey = mr_->rkey;
    c.addr = reinterpret_cast<uintptr_t>(buffer_);
    c.length = shape_.block;
  }
  for (size_t i = 0; i < qps_.size(); ++i) c.qps.push_back({qps_[i]->qp_num, psns_[i]});
  return c;
}

Status Side::Connect(const ConnInfo& remote) {
  const auto& v = Verbs();
  if (remote.qps.size() != qps_.size()) {
    return Err("rdma: the peer has " + std::to_string(remote.qps.size()) +
               " queue pairs, this side " + std::to_string(qps_.size()) +
               ": give both ranks the same connections");
  }
  if (!receiver_ && remote.length < shape_.block) {
    return Err("rdma: the peer's buffer is " + std::to_string(remote.length) +
               " bytes, this side writes blocks of " + std::to_string(shape_.block) +
               ": give both ranks the same block");
  }
  const bool grh = dev_.gid_index() >= 0;
  if (grh && !remote.has_gid()) {
    return Err("rdma: the peer sent no GID, but " + dev_.Describe() +
               " needs one (RoCE): give both ranks ports of the same kind");
  }
  remote_ = remote;
  const int mtu = std::min(dev_.mtu(), remote.mtu);
  for (size_t i = 0; i < qps_.size(); ++i) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = static_cast<ibv_mtu>(MtuEnum(mtu));
    a.dest_qp_num = remote.qps[i].qpn;
    a.rq_psn = remote.qps[i].psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;  // 0.01 ms: a receiver that is briefly behind costs little
    a.ah_attr.dlid = remote.lid;
    a.ah_attr.port_num = static_cast<uint8_t>(dev_.port().port);
    if (grh) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_.gid_index());
      a.ah_attr.grh.hop_limit = 64;  // RoCE v2 crosses routers
    }
    if (int rc = v.modify_qp(qps_[i], &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
        rc != 0) {
      return Err(Why("ibv_modify_qp(RTR) of QP " + std::to_string(i), rc));
    }
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTS;
    r.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try: a dead peer fails within ~0.5 s
    r.retry_cnt = 7;
    r.rnr_retry = 7;  // receiver not ready: retry indefinitely (flow control, not failure)
    r.sq_psn = psns_[i];
    r.max_rd_atomic = 1;
    if (int rc = v.modify_qp(qps_[i], &r,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
        rc != 0) {
      return Err(Why("ibv_modify_qp(RTS) of QP " + std::to_string(i), rc));
    }
  }
  return Status::Ok();
}

Status Side::Post(int i) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(buffer_);
  sge.length = static_cast<uint32_t>(shape_.block);
  sge.lkey = mr_->lkey;
  int rc;
  if (receiver_) {
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = static_cast<uint64_t>(i);
    // A WRITE with immediate places its payload itself; its receive takes no buffer.
    wr.sg_list = shape_.write ? nullptr : &sge;
    wr.num_sge = shape_.write ? 0 : 1;
    rc = ibv_post_recv(qps_[i], &wr, &bad);
  } else {
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (shape_.write) {
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.imm_data = htonl(static_cast<uint32_t>(shape_.block));
      wr.wr.rdma.remote_addr = remote_.addr;
      wr.wr.rdma.rkey = remote_.rkey;
    } else {
      wr.opcode = IBV_WR_SEND;
    }
    rc = ibv_post_send(qps_[i], &wr, &bad);
  }
  if (rc != 0)
    return Err(Why(
        std::string(receiver_ ? "ibv_post_recv" : "ibv_post_send") + " on QP " + std::to_string(i),
        rc));
  return Status::Ok();
}

Result<int> Side::Reap(int i) {
  ibv_wc wc[32];
  const int n = ibv_poll_cq(cqs_[i], 32, wc);
  if (n < 0) return Err("rdma: ibv_poll_cq on QP " + std::to_string(i) + " failed");
  for (int k = 0; k < n; ++k) {
    if (wc[k].status != IBV_WC_SUCCESS) {
      char vendor[16];
      std::snprintf(vendor, sizeof vendor, "0x%x", wc[k].vendor_err);
      return Err("QP " + std::to_string(i) + ": " + Verbs().wc_status_str(wc[k].status) +
                 " (status " + std::to_string(wc[k].status) + ", vendor error " + vendor + ")");
    }
  }
  return n;
}

}  // namespace codl::injectors::rdma
