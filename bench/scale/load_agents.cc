// The emulated agents of codl-load-agents (load_agents.h; bench/run_scale_bench.sh).
// Each emulated agent speaks the real agent protocol, nothing less:
//   * its own gRPC channel to the controller (a local subchannel pool, so N agents are N TCP
//     connections, as N agent processes would be), RegisterAgent with labels like a real
//     agent's, and Heartbeat at the interval the controller returns, carrying the previous round
//     trip and NTP-style offset exactly as agent/controller_link.cc computes them; the next
//     heartbeat is sent one interval after the previous reply (the real agent's loop), and a
//     `reregister` reply makes it register again;
//   * its own listening port: one gRPC server in this process listens on N loopback ports and
//     serves the Agent service on all of them. A call is attributed to an agent by the port it
//     was dialled on (the :authority the controller's channel sends, "127.0.0.1:PORT"), and
//     cross-checked against the antagonist id's "-<agent id>" suffix. So the controller holds N
//     channels to N addresses, as in a real cluster.
// This file holds Load, the agents' controller-facing side (ports, channels, registration,
// heartbeats, telemetry timers); the Agent service they serve, and what it does and does not
// emulate, is in load_agent_service.cc; the types both share are in load_internal.h.
//
// Measurement: every StartAntagonist arrival is recorded (arrival time at the handler, the
// request's start_at_unix_ns, the agent's own offset estimate); on exit (SIGINT/SIGTERM or
// --duration) the tool writes them to --out as JSON, with heartbeat counts and round trips.
// Everything runs on loopback (plaintext allowed there); --tls-* switches to mTLS.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "bench/scale/load_agents.h"
#include "bench/scale/load_internal.h"
#include "bench/scale/load_stats.h"
#include "bench/scale/timer_queue.h"
#include "lib/rpc/rpc_util.h"

namespace codl::bench::load_internal {
namespace {

std::atomic<bool> g_stop{false};

}  // namespace

codl::Status Load::Start() {
  if (codl::Status s = codl::rpc::CheckEndpointSecurity({o_.controller, o_.tls}); !s.ok()) return s;
  auto creds = codl::rpc::MakeServerCredentials({o_.listen_host + ":0", o_.tls});
  if (!creds.ok()) return creds.status();
  agents_.resize(o_.agents);
  grpc::ServerBuilder builder;
  for (int i = 0; i < o_.agents; ++i) {
    agents_[i] = std::make_unique<LoadAgent>();
    agents_[i]->index = i;
    char id[64];
    snprintf(id, sizeof id, "%s%04d", o_.id_prefix.c_str(), i);
    agents_[i]->id = id;
    builder.AddListeningPort(o_.listen_host + ":0", *creds, &agents_[i]->port);
  }
  service_ = std::make_unique<AgentService>(this);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return codl::Err("cannot start the agent server on " + o_.listen_host);
  for (auto& a : agents_) {
    if (a->port == 0) return codl::Err("could not bind port for " + a->id);
    a->address = o_.listen_host + ":" + std::to_string(a->port);
    by_port_[a->port] = a.get();
    auto ch = MakeControllerChannel();
    if (!ch.ok()) return ch.status();
    a->stub = v1::Controller::NewStub(*ch);
  }
  // Registrations spread over register_spread_s, so heartbeat phases are spread too (agents
  // of a real cluster do not start in the same millisecond).
  const int64_t t0 = NowNs();
  for (auto& a : agents_) {
    LoadAgent* ag = a.get();
    int64_t at =
        t0 + static_cast<int64_t>(o_.register_spread_s * 1e9 * ag->index / std::max(1, o_.agents));
    timers_.Post(at, [this, ag] { SendRegister(ag); });
  }
  return codl::Status::Ok();
}

void Load::Shutdown() {
  g_stop = true;
  timers_.Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // Wait for in-flight client calls (their callbacks touch the agents).
  for (int i = 0; i < 100 && in_flight_ > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

int Load::Registered() const {
  int n = 0;
  for (const auto& a : agents_) {
    std::lock_guard<std::mutex> l(a->mu);
    n += a->registered;
  }
  return n;
}

LoadAgent* Load::AgentFor(grpc::CallbackServerContext* ctx, const std::string& antagonist_id) {
  std::string auth(ctx->ExperimentalGetAuthority().data(), ctx->ExperimentalGetAuthority().size());
  int port = atoi(auth.substr(auth.rfind(':') + 1).c_str());
  auto it = by_port_.find(port);
  if (it == by_port_.end()) {
    ++stats_.misrouted;
    return nullptr;
  }
  LoadAgent* a = it->second;
  const std::string suffix = "-" + a->id;
  if (!antagonist_id.empty() &&
      (antagonist_id.size() < suffix.size() ||
       antagonist_id.compare(antagonist_id.size() - suffix.size(), suffix.size(), suffix) != 0)) {
    ++stats_.misrouted;  // the controller sent agent X's antagonist to agent Y's address
  }
  return a;
}

void Load::Remember(LoadAgent* a, const std::string& key, const google::protobuf::Message& reply) {
  if (key.empty()) return;
  std::lock_guard<std::mutex> l(a->mu);
  if (a->replies.size() > 4096) a->replies.clear();
  a->replies[key] = reply.SerializeAsString();
}

void Load::SampleAt(LoadAgent* a, std::string id, int64_t started_ns, int64_t at_ns) {
  timers_.Post(at_ns, [this, a, id = std::move(id), started_ns, at_ns]() mutable {
    std::lock_guard<std::mutex> l(a->mu);
    auto it = a->antagonists.find(id);
    if (it == a->antagonists.end() || it->second.started_ns != started_ns) return;
    if (!a->streams.empty()) {
      v1::TelemetryEvent ev;
      const int64_t now = NowNs();
      ev.set_agent_unix_ns(now);
      auto* ant = ev.mutable_antagonist();
      ant->set_antagonist_id(id);
      ant->set_unit("ops/s");
      ant->mutable_sample()->set_t_s((now - started_ns) / 1e9);
      ant->mutable_sample()->set_achieved(it->second.target);
      ant->mutable_sample()->set_target(it->second.target);
      for (auto& [handle, sub] : a->streams) {
        if (!sub.first.empty() && id.rfind(sub.first, 0) == 0) {
          sub.second->Push(ev);
          ++stats_.telemetry_events;
        }
      }
    }
    SampleAt(a, std::move(id), started_ns, at_ns + kSamplePeriodNs);
  });
}

Json Load::Report() {
  std::vector<std::string> ids;
  for (const auto& a : agents_) ids.push_back(a->id);
  Json j = codl::bench::StatsReport(stats_, ids);
  j["agents"] = o_.agents;
  j["registered"] = Registered();
  return j;
}

codl::Result<std::shared_ptr<grpc::Channel>> Load::MakeControllerChannel() {
  // One credentials object for all N channels: N agent processes would each load their key
  // once; N objects here would make this one process pay N TLS contexts (and make it, not
  // the controller, the bottleneck of a TLS run).
  if (!creds_) {
    auto creds = rpc::MakeChannelCredentials(o_.tls);
    if (!creds.ok()) return creds.status();
    creds_ = *creds;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = creds_;
  grpc::ChannelArguments args;
  // The same settings as rpc::MakeChannel, plus a private subchannel pool: without it gRPC
  // would share one TCP connection between all N channels of this process.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  // In gRPC this is also the minimum connect timeout (TCP + TLS handshake + HTTP/2 settings).
  // --min-connect-timeout-ms 0 leaves gRPC's 20 s default: what-if for rpc::MakeChannel.
  if (o_.min_connect_timeout_ms > 0)
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, o_.min_connect_timeout_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, std::max(4000, o_.min_connect_timeout_ms));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(o_.controller, creds, args);
}

std::unique_ptr<grpc::ClientContext> Load::Context(double deadline_s) {
  return codl::rpc::MakeContext(deadline_s);
}

// The request is built under the agent's lock, which is released before the call starts (a
// callback may run inline on this thread).
void Load::SendRegister(LoadAgent* a) {
  if (g_stop) return;
  std::unique_lock<std::mutex> l(a->mu);
  a->reg_req.Clear();
  a->reg_req.set_idempotency_key(codl::rpc::NewIdempotencyKey());
  auto* info = a->reg_req.mutable_agent();
  info->set_agent_id(a->id);
  info->set_address(a->address);
  // Labels of the size a real agent sends (agent/host_labels.cc).
  auto& lb = *info->mutable_labels();
  lb["hostname"] = a->id;
  lb["cores"] = "64";
  lb["memory_gib"] = "512";
  lb["numa_nodes"] = "2";
  lb["gpus"] = "8";
  lb["gpu_model"] = "NVIDIA H100 80GB HBM3";
  lb["io_uring"] = "1";
  lb["io_uring_sqpoll"] = "1";
  lb["mps"] = "0";
  lb["role"] = "load";
  lb["rack"] = "r" + std::to_string(a->index / 32);
  a->reg_req.set_agent_time_unix_ns(NowNs());
  a->ctx = Context(3.0);
  l.unlock();
  stats_.RecordRegisterAttempt(a->index, a->reg_req.agent_time_unix_ns());
  ++in_flight_;
  a->stub->async()->RegisterAgent(
      a->ctx.get(), &a->reg_req, &a->reg_reply, [this, a](grpc::Status s) {
        double interval = 1;
        {
          std::lock_guard<std::mutex> l(a->mu);
          if (s.ok()) {
            a->registered = true;
            ++stats_.registrations;
            stats_.RecordRegistration(a->index, NowNs());
            if (a->reg_reply.heartbeat_interval_s() > 0)
              interval_s_ = a->reg_reply.heartbeat_interval_s();
          } else if (++stats_.register_failures <= 5) {
            fprintf(stderr, "codl-load-agents: %s: RegisterAgent failed: %d %s\n", a->id.c_str(),
                    static_cast<int>(s.error_code()), s.error_message().c_str());
          }
          interval = s.ok() ? interval_s_.load() : 0.25;  // the real agent retries every 0.25 s
        }
        timers_.PostCoalesced(NowNs() + static_cast<int64_t>(interval * 1e9),
                              [this, a] { Tick(a); });
        --in_flight_;
      });
}

void Load::Tick(LoadAgent* a) {
  bool registered;
  {
    std::lock_guard<std::mutex> l(a->mu);
    registered = a->registered;
  }
  if (registered) {
    SendHeartbeat(a);
  } else {
    SendRegister(a);
  }
}

void Load::SendHeartbeat(LoadAgent* a) {
  if (g_stop) return;
  std::unique_lock<std::mutex> l(a->mu);
  a->hb_req.Clear();
  a->hb_req.set_agent_id(a->id);
  a->hb_t0 = NowNs();
  a->hb_req.set_agent_send_unix_ns(a->hb_t0);
  a->hb_req.set_running_antagonists(static_cast<int>(a->antagonists.size()));
  a->hb_req.set_last_rtt_s(a->last_rtt_s);
  a->hb_req.set_last_offset_s(a->last_offset_s);
  a->ctx = Context(std::max(0.5, interval_s_.load()));
  l.unlock();
  ++in_flight_;
  a->stub->async()->Heartbeat(a->ctx.get(), &a->hb_req, &a->hb_reply, [this, a](grpc::Status s) {
    const int64_t t3 = NowNs();
    {
      std::lock_guard<std::mutex> l(a->mu);
      if (!s.ok()) {
        ++stats_.heartbeats_failed;
      } else if (a->hb_reply.reregister()) {
        ++stats_.reregisters;
        a->registered = false;
      } else {
        ++stats_.heartbeats_ok;
        // Exactly agent/controller_link.cc's estimate.
        const int64_t t0 = a->hb_t0, t1 = a->hb_reply.controller_recv_unix_ns(),
                      t2 = a->hb_reply.controller_send_unix_ns();
        a->last_rtt_s = ((t3 - t0) - (t2 - t1)) / 1e9;
        a->last_offset_s = -(((t1 - t0) + (t2 - t3)) / 2.0) / 1e9;
        std::lock_guard<std::mutex> sl(stats_.mu);
        if (stats_.rtts_s.size() < 2'000'000) stats_.rtts_s.push_back(a->last_rtt_s);
      }
    }
    timers_.PostCoalesced(t3 + static_cast<int64_t>(interval_s_.load() * 1e9),
                          [this, a] { Tick(a); });
    --in_flight_;
  });
}

}  // namespace codl::bench::load_internal

namespace codl::bench {
LoadAgents::~LoadAgents() = default;

namespace {
// Adapts Load (load_internal.h) to the interface main.cc sees.
class LoadAdapter : public LoadAgents {
 public:
  explicit LoadAdapter(const LoadOptions& o) : load_(o) {}
  codl::Status Start() override { return load_.Start(); }
  void Shutdown() override { load_.Shutdown(); }
  int Registered() const override { return load_.Registered(); }
  nlohmann::json Report() override { return load_.Report(); }

 private:
  load_internal::Load load_;
};
}  // namespace

std::unique_ptr<LoadAgents> MakeLoadAgents(const LoadOptions& o) {
  return std::make_unique<LoadAdapter>(o);
}
}  // namespace codl::bench
