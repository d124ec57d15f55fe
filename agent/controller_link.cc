#include "agent/controller_link.h"

#include <spdlog/spdlog.h>

#include "agent/node_snapshot.h"
#include "codl/v1/controller.grpc.pb.h"
#include "lib/common/tunables.h"

namespace codl::agent {

namespace {
v1::Controller::Stub* StubOf(const std::shared_ptr<void>& p) {
  return static_cast<v1::Controller::Stub*>(p.get());
}
}  // namespace

ControllerLink::ControllerLink(Options options, LeaseMonitor* lease, const Clock* clock,
                               std::function<int()> running_antagonists)
    : options_(std::move(options)),
      lease_(lease),
      clock_(clock),
      running_antagonists_(std::move(running_antagonists)) {}

ControllerLink::~ControllerLink() { Stop(); }

Status ControllerLink::Start() {
  auto channel = rpc::MakeChannel(options_.controller);
  if (!channel.ok()) return channel.status();
  auto stub = v1::Controller::NewStub(*channel);
  stub_holder_ = std::shared_ptr<void>(
      stub.release(), [](void* p) { delete static_cast<v1::Controller::Stub*>(p); });
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void ControllerLink::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ControllerLink::Register() {
  v1::RegisterAgentRequest req;
  req.set_idempotency_key(rpc::NewIdempotencyKey());
  auto* info = req.mutable_agent();
  info->set_agent_id(options_.agent_id);
  info->set_address(options_.advertise);
  for (const auto& [k, v] : options_.labels) (*info->mutable_labels())[k] = v;
  // Taken at every registration: a re-registering agent may have had its governor changed.
  *req.mutable_node() = DetectNodeSnapshot(options_.labels);
  req.set_agent_time_unix_ns(clock_->UnixNanos());
  req.set_session_id(session_id_);
  v1::RegisterAgentReply reply;
  auto ctx = rpc::MakeContext(tunables::kRegisterDeadlineS);
  grpc::Status s = StubOf(stub_holder_)->RegisterAgent(ctx.get(), req, &reply);
  if (!s.ok()) {
    if (!warned_) {
      spdlog::warn("cannot register with controller {}: {} (retrying)", options_.controller.address,
                   s.error_message());
      warned_ = true;
    }
    return false;
  }
  warned_ = false;
  if (reply.heartbeat_interval_s() > 0)
    options_.heartbeat_interval_s = reply.heartbeat_interval_s();
  lease_->Renew();
  spdlog::info("registered with controller {} as {} ({})", options_.controller.address,
               options_.agent_id, options_.advertise);
  return true;
}

bool ControllerLink::Heartbeat() {
  v1::HeartbeatRequest req;
  req.set_agent_id(options_.agent_id);
  const int64_t t0 = clock_->UnixNanos();
  req.set_agent_send_unix_ns(t0);
  req.set_running_antagonists(running_antagonists_ ? running_antagonists_() : 0);
  req.set_last_rtt_s(last_rtt_s_);
  req.set_last_offset_s(last_offset_s_);
  req.set_load_avg_1m(LoadAverage1m());
  req.set_session_id(session_id_);
  v1::HeartbeatReply reply;
  // The deadline is short: a heartbeat that takes longer than the interval is a lost one.
  auto ctx =
      rpc::MakeContext(std::max(tunables::kMinHeartbeatDeadlineS, options_.heartbeat_interval_s));
  grpc::Status s = StubOf(stub_holder_)->Heartbeat(ctx.get(), req, &reply);
  const int64_t t3 = clock_->UnixNanos();
  if (!s.ok()) {
    if (!warned_) {
      spdlog::warn("heartbeat to {} failed: {} (lease runs out after {:.1f} s of silence)",
                   options_.controller.address, s.error_message(),
                   0.0 + lease_->SecondsSinceContact());
      warned_ = true;
    }
    return false;
  }
  warned_ = false;
  if (reply.reregister()) {
    registered_ = false;
    return false;
  }
  lease_->Renew();
  const int64_t t1 = reply.controller_recv_unix_ns(), t2 = reply.controller_send_unix_ns();
  last_rtt_s_ = ((t3 - t0) - (t2 - t1)) / 1e9;
  // NTP offset: controller minus agent; we report agent minus controller.
  last_offset_s_ = -(((t1 - t0) + (t2 - t3)) / 2.0) / 1e9;
  return true;
}

Status ControllerLink::PublishRendezvous(const std::string& key, const std::string& value) {
  if (!stub_holder_) return FailedPrecondition("not connected to a controller");
  v1::PublishRendezvousRequest req;
  req.set_key(key);
  req.set_value(value);
  v1::PublishRendezvousReply reply;
  auto ctx = rpc::MakeContext(tunables::kPublishRendezvousDeadlineS);
  return rpc::FromGrpc(StubOf(stub_holder_)->PublishRendezvous(ctx.get(), req, &reply),
                       "controller PublishRendezvous");
}

Result<std::string> ControllerLink::FetchRendezvous(const std::string& key, double wait_s) {
  if (!stub_holder_) return FailedPrecondition("not connected to a controller");
  v1::FetchRendezvousRequest req;
  req.set_key(key);
  req.set_wait_s(wait_s);
  v1::FetchRendezvousReply reply;
  auto ctx = rpc::MakeContext(wait_s + tunables::kFetchRendezvousMarginS);
  grpc::Status s = StubOf(stub_holder_)->FetchRendezvous(ctx.get(), req, &reply);
  if (Status st = rpc::FromGrpc(s, "controller FetchRendezvous"); !st.ok()) return st;
  if (!reply.found()) {
    return DeadlineExceeded("not published within " + std::to_string(static_cast<int>(wait_s)) +
                            " s");
  }
  return reply.value();
}

void ControllerLink::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (stop_) return;
    }
    if (!registered_) {
      registered_ = Register();
    } else {
      Heartbeat();
    }
    std::unique_lock<std::mutex> l(mu_);
    double wait = registered_ ? options_.heartbeat_interval_s : 0.25;
    cv_.wait_for(l, std::chrono::duration<double>(wait), [this] { return stop_; });
    if (stop_) return;
  }
}

}  // namespace codl::agent
