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
// What it does NOT do is spawn anything: StartAntagonist waits (on a timer, not a thread) until
// the requested start time and replies then, like the real agent (started_unix_ns = when the
// timer fired; starts due at once share that time, as N hosts would wake in parallel);
// GetAntagonist reports the target as achieved with one telemetry sample per 250 ms since the
// start (a real injector reports at 4 Hz); StopAntagonist returns those samples; RunVictim
// replies after --victim-time; Calibrate returns a fixed peak. Idempotency keys are honoured
// like the real agent's cache. StreamTelemetry streams what the real agent's TelemetryHub
// would: one antagonist sample per 250 ms of every running antagonist whose id starts with the
// stream's trial id (target achieved), until the controller cancels it. EstimateSetup answers
// --setup-estimate (default 0 s: what a real agent answers for `noop`).
//
// Measurement: every StartAntagonist arrival is recorded (arrival time at the handler, the
// request's start_at_unix_ns, the agent's own offset estimate); on exit (SIGINT/SIGTERM or
// --duration) the tool writes them to --out as JSON, with heartbeat counts and round trips.
// Everything runs on loopback (plaintext allowed there); --tls-* switches to mTLS.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "bench/scale/load_agents.h"
#include "bench/scale/load_stats.h"
#include "bench/scale/timer_queue.h"
#include "codl/v1/agent.grpc.pb.h"
#include "codl/v1/controller.grpc.pb.h"
#include "lib/rpc/queued_writer.h"
#include "lib/rpc/rpc_util.h"

namespace v1 = codl::v1;
using Json = nlohmann::json;

namespace {

using Options = codl::bench::LoadOptions;
using codl::FailedPrecondition;
using codl::NotFound;
using codl::Status;
using codl::bench::NowNs;
using codl::bench::StartRecord;
using codl::bench::Stats;
using codl::bench::TimerQueue;
namespace rpc = codl::rpc;

struct Antagonist {
  double target = 0;
  int64_t started_ns = 0;
};

// A sample every 250 ms, as a real injector reports (4 Hz).
constexpr int64_t kSamplePeriodNs = 250'000'000;

class TelemetryStream;

struct LoadAgent {
  int index = 0;
  std::string id;
  int port = 0;
  std::string address;
  std::unique_ptr<v1::Controller::Stub> stub;

  std::mutex mu;
  bool registered = false;
  double last_rtt_s = 0, last_offset_s = 0;
  // The in-flight controller call (one at a time, as the real agent's loop).
  std::unique_ptr<grpc::ClientContext> ctx;
  v1::RegisterAgentRequest reg_req;
  v1::RegisterAgentReply reg_reply;
  v1::HeartbeatRequest hb_req;
  v1::HeartbeatReply hb_reply;
  int64_t hb_t0 = 0;
  std::map<std::string, Antagonist> antagonists;
  std::map<std::string, std::string> replies;  // idempotency key -> serialized reply
  // Open StreamTelemetry calls: handle -> (trial id, stream).
  std::map<int, std::pair<std::string, TelemetryStream*>> streams;
  int next_stream = 1;
};

// One StreamTelemetry call of one emulated agent (the real agent's TelemetryReactor): it is in
// the agent's `streams` from construction until gRPC is done with it. Pushed to under the
// agent's lock, which OnUnsubscribe takes too, so a push never reaches a deleted stream.
class TelemetryStream final : public codl::rpc::QueuedWriteReactor<v1::TelemetryEvent> {
 public:
  TelemetryStream(LoadAgent* a, const std::string& trial_id) : a_(a) {
    std::lock_guard<std::mutex> l(a->mu);
    handle_ = a->next_stream++;
    a->streams[handle_] = {trial_id, this};
  }

 protected:
  void OnUnsubscribe() override {
    std::lock_guard<std::mutex> l(a_->mu);
    a_->streams.erase(handle_);
  }

 private:
  LoadAgent* a_;
  int handle_ = 0;
};

std::atomic<bool> g_stop{false};

class Load;

// The Agent service for all N agents; the agent is found from the port the call came in on.
class AgentService final : public v1::Agent::CallbackService {
 public:
  explicit AgentService(Load* load) : load_(load) {}
  grpc::ServerUnaryReactor* Calibrate(grpc::CallbackServerContext* ctx,
                                      const v1::CalibrateRequest* req,
                                      v1::CalibrateReply* reply) override;
  grpc::ServerUnaryReactor* StartAntagonist(grpc::CallbackServerContext* ctx,
                                            const v1::StartAntagonistRequest* req,
                                            v1::StartAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* GetAntagonist(grpc::CallbackServerContext* ctx,
                                          const v1::GetAntagonistRequest* req,
                                          v1::GetAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* StopAntagonist(grpc::CallbackServerContext* ctx,
                                           const v1::StopAntagonistRequest* req,
                                           v1::StopAntagonistReply* reply) override;
  grpc::ServerUnaryReactor* RunVictim(grpc::CallbackServerContext* ctx,
                                      const v1::RunVictimRequest* req,
                                      v1::RunVictimReply* reply) override;
  grpc::ServerUnaryReactor* StopAll(grpc::CallbackServerContext* ctx, const v1::StopAllRequest* req,
                                    v1::StopAllReply* reply) override;
  grpc::ServerWriteReactor<v1::TelemetryEvent>* StreamTelemetry(
      grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) override;
  grpc::ServerUnaryReactor* EstimateSetup(grpc::CallbackServerContext* ctx,
                                          const v1::EstimateSetupRequest* req,
                                          v1::EstimateSetupReply* reply) override;

 private:
  Load* load_;
};

class Load {
 public:
  explicit Load(Options o) : o_(std::move(o)) {}

  codl::Status Start() {
    if (codl::Status s = codl::rpc::CheckEndpointSecurity({o_.controller, o_.tls}); !s.ok())
      return s;
    auto creds = codl::rpc::MakeServerCredentials({o_.listen_host + ":0", o_.tls});
    if (!creds.ok()) return codl::Err(creds.error());
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
      if (!ch.ok()) return codl::Err(ch.error());
      a->stub = v1::Controller::NewStub(*ch);
    }
    // Registrations spread over register_spread_s, so heartbeat phases are spread too (agents
    // of a real cluster do not start in the same millisecond).
    const int64_t t0 = NowNs();
    for (auto& a : agents_) {
      LoadAgent* ag = a.get();
      int64_t at = t0 + static_cast<int64_t>(o_.register_spread_s * 1e9 * ag->index /
                                             std::max(1, o_.agents));
      timers_.Post(at, [this, ag] { SendRegister(ag); });
    }
    return codl::Status::Ok();
  }

  void Shutdown() {
    g_stop = true;
    timers_.Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    // Wait for in-flight client calls (their callbacks touch the agents).
    for (int i = 0; i < 100 && in_flight_ > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  int Registered() const {
    int n = 0;
    for (const auto& a : agents_) {
      std::lock_guard<std::mutex> l(a->mu);
      n += a->registered;
    }
    return n;
  }

  LoadAgent* AgentFor(grpc::CallbackServerContext* ctx, const std::string& antagonist_id) {
    std::string auth(ctx->ExperimentalGetAuthority().data(),
                     ctx->ExperimentalGetAuthority().size());
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

  // Replays the stored reply of a retried call (same idempotency key).
  template <class Reply>
  bool Replay(LoadAgent* a, const std::string& key, Reply* reply) {
    if (key.empty()) return false;
    std::lock_guard<std::mutex> l(a->mu);
    auto it = a->replies.find(key);
    if (it == a->replies.end()) return false;
    reply->ParseFromString(it->second);
    return true;
  }
  void Remember(LoadAgent* a, const std::string& key, const google::protobuf::Message& reply) {
    if (key.empty()) return;
    std::lock_guard<std::mutex> l(a->mu);
    if (a->replies.size() > 4096) a->replies.clear();
    a->replies[key] = reply.SerializeAsString();
  }

  // Publishes one sample of antagonist `id` (started at `started_ns`) to the agent's streams
  // subscribed to it, every kSamplePeriodNs from `at_ns` until it stops (or restarts).
  void SampleAt(LoadAgent* a, std::string id, int64_t started_ns, int64_t at_ns) {
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

  TimerQueue& timers() { return timers_; }
  Stats& stats() { return stats_; }
  const Options& options() const { return o_; }

  Json Report() {
    std::vector<std::string> ids;
    for (const auto& a : agents_) ids.push_back(a->id);
    Json j = codl::bench::StatsReport(stats_, ids);
    j["agents"] = o_.agents;
    j["registered"] = Registered();
    return j;
  }

 private:
  codl::Result<std::shared_ptr<grpc::Channel>> MakeControllerChannel() {
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

  std::unique_ptr<grpc::ClientContext> Context(double deadline_s) {
    return codl::rpc::MakeContext(deadline_s);
  }

  // The request is built under the agent's lock, which is released before the call starts (a
  // callback may run inline on this thread).
  void SendRegister(LoadAgent* a) {
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
          timers_.Post(NowNs() + static_cast<int64_t>(interval * 1e9), [this, a] { Tick(a); });
          --in_flight_;
        });
  }

  void Tick(LoadAgent* a) {
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

  void SendHeartbeat(LoadAgent* a) {
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
      timers_.Post(t3 + static_cast<int64_t>(interval_s_.load() * 1e9), [this, a] { Tick(a); });
      --in_flight_;
    });
  }

  Options o_;
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  std::vector<std::unique_ptr<LoadAgent>> agents_;
  std::map<int, LoadAgent*> by_port_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  TimerQueue timers_;
  Stats stats_;
  std::atomic<double> interval_s_{1.0};
  std::atomic<int> in_flight_{0};
};

grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* ctx, const Status& s) {
  auto* r = ctx->DefaultReactor();
  r->Finish(rpc::ToGrpc(s));
  return r;
}

grpc::ServerUnaryReactor* AgentService::Calibrate(grpc::CallbackServerContext* ctx,
                                                  const v1::CalibrateRequest* req,
                                                  v1::CalibrateReply* reply) {
  if (!load_->AgentFor(ctx, "")) return Fail(ctx, NotFound("unknown port"));
  reply->set_peak_rate(1e6);
  reply->set_unit("ops/s");
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::StartAntagonist(grpc::CallbackServerContext* ctx,
                                                        const v1::StartAntagonistRequest* req,
                                                        v1::StartAntagonistReply* reply) {
  const int64_t arrival = NowNs();
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  double offset;
  {
    std::lock_guard<std::mutex> l(a->mu);
    if (a->antagonists.count(req->antagonist_id())) {
      r->Finish(rpc::ToGrpc(
          FailedPrecondition("antagonist '" + req->antagonist_id() + "' is already running")));
      return r;
    }
    offset = a->last_offset_s;
  }
  ++load_->stats().starts;
  // Like the real agent: wait until the common start time, then "start" and reply.
  const int64_t at = std::max(req->start_at_unix_ns(), arrival);
  Load* load = load_;
  std::string id = req->antagonist_id(), key = req->idempotency_key();
  double target = req->spec().rate();
  int64_t start_at = req->start_at_unix_ns();
  load_->timers().Post(at, [load, a, r, reply, id, key, target, arrival, start_at, offset] {
    const int64_t now = TimerQueue::FiredNs();  // "started" when its timer fired
    {
      std::lock_guard<std::mutex> l(a->mu);
      a->antagonists[id] = Antagonist{target, now};
    }
    load->SampleAt(a, id, now, now + kSamplePeriodNs);
    reply->set_pid(100000 + a->index);
    reply->set_started_unix_ns(now);
    load->Remember(a, key, *reply);
    {
      std::lock_guard<std::mutex> l(load->stats().mu);
      load->stats().start_records.push_back(
          StartRecord{a->index, id, arrival, start_at, offset, now});
    }
    r->Finish(grpc::Status::OK);
  });
  return r;
}

grpc::ServerUnaryReactor* AgentService::GetAntagonist(grpc::CallbackServerContext* ctx,
                                                      const v1::GetAntagonistRequest* req,
                                                      v1::GetAntagonistReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  ++load_->stats().gets;
  std::lock_guard<std::mutex> l(a->mu);
  auto it = a->antagonists.find(req->antagonist_id());
  if (it == a->antagonists.end()) {
    auto* r = ctx->DefaultReactor();
    r->Finish(rpc::ToGrpc(NotFound("no antagonist '" + req->antagonist_id() + "'")));
    return r;
  }
  const int samples = static_cast<int>((NowNs() - it->second.started_ns) / 250'000'000);
  reply->set_running(true);
  reply->set_unit("ops/s");
  reply->set_target(it->second.target);
  reply->set_samples(samples);
  reply->set_last_achieved(samples > 0 ? it->second.target : 0);
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::StopAntagonist(grpc::CallbackServerContext* ctx,
                                                       const v1::StopAntagonistRequest* req,
                                                       v1::StopAntagonistReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, req->antagonist_id());
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  Antagonist ant;
  {
    std::lock_guard<std::mutex> l(a->mu);
    auto it = a->antagonists.find(req->antagonist_id());
    if (it == a->antagonists.end()) {
      r->Finish(rpc::ToGrpc(NotFound("no antagonist '" + req->antagonist_id() + "'")));
      return r;
    }
    ant = it->second;
    a->antagonists.erase(it);
  }
  ++load_->stats().stops;
  const double ran_s = (NowNs() - ant.started_ns) / 1e9;
  reply->set_unit("ops/s");
  reply->set_target_rate(ant.target);
  reply->set_achieved_rate(ant.target);
  reply->set_cov(0);
  for (double t = 0.25; t <= ran_s; t += 0.25) {
    auto* s = reply->add_samples();
    s->set_t_s(t);
    s->set_achieved(ant.target);
    s->set_target(ant.target);
  }
  reply->set_exit_code(0);
  load_->Remember(a, req->idempotency_key(), *reply);
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerUnaryReactor* AgentService::RunVictim(grpc::CallbackServerContext* ctx,
                                                  const v1::RunVictimRequest* req,
                                                  v1::RunVictimReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return Fail(ctx, NotFound("unknown port"));
  auto* r = ctx->DefaultReactor();
  if (load_->Replay(a, req->idempotency_key(), reply)) {
    r->Finish(grpc::Status::OK);
    return r;
  }
  ++load_->stats().victims;
  const int64_t started = NowNs();
  const double wall = load_->options().victim_s;
  Load* load = load_;
  std::string key = req->idempotency_key();
  load_->timers().Post(started + static_cast<int64_t>(wall * 1e9),
                       [load, a, r, reply, key, started, wall] {
                         reply->set_ok(true);
                         reply->set_exit_code(0);
                         reply->set_wall_s(wall);
                         reply->set_metric(wall);
                         reply->set_started_unix_ns(started);
                         load->Remember(a, key, *reply);
                         r->Finish(grpc::Status::OK);
                       });
  return r;
}

grpc::ServerUnaryReactor* AgentService::StopAll(grpc::CallbackServerContext* ctx,
                                                const v1::StopAllRequest* req,
                                                v1::StopAllReply* reply) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return Fail(ctx, NotFound("unknown port"));
  {
    std::lock_guard<std::mutex> l(a->mu);
    reply->set_stopped(static_cast<int>(a->antagonists.size()));
    a->antagonists.clear();
  }
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerWriteReactor<v1::TelemetryEvent>* AgentService::StreamTelemetry(
    grpc::CallbackServerContext* ctx, const v1::StreamTelemetryRequest* req) {
  LoadAgent* a = load_->AgentFor(ctx, "");
  if (!a) return rpc::RefuseStream<v1::TelemetryEvent>(rpc::ToGrpc(NotFound("unknown port")));
  if (req->trial_id().empty()) {
    return rpc::RefuseStream<v1::TelemetryEvent>(
        rpc::ToGrpc(codl::InvalidArgument("trial_id is empty")));
  }
  ++load_->stats().streams;
  return new TelemetryStream(a, req->trial_id());
}

grpc::ServerUnaryReactor* AgentService::EstimateSetup(grpc::CallbackServerContext* ctx,
                                                      const v1::EstimateSetupRequest*,
                                                      v1::EstimateSetupReply* reply) {
  if (!load_->AgentFor(ctx, "")) return Fail(ctx, NotFound("unknown port"));
  ++load_->stats().estimates;
  reply->set_setup_estimate_s(load_->options().setup_estimate_s);
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

}  // namespace

namespace codl::bench {
LoadAgents::~LoadAgents() = default;

namespace {
// Adapts Load (above) to the interface main.cc sees.
class LoadAdapter : public LoadAgents {
 public:
  explicit LoadAdapter(const LoadOptions& o) : load_(o) {}
  codl::Status Start() override { return load_.Start(); }
  void Shutdown() override { load_.Shutdown(); }
  int Registered() const override { return load_.Registered(); }
  nlohmann::json Report() override { return load_.Report(); }

 private:
  Load load_;
};
}  // namespace

std::unique_ptr<LoadAgents> MakeLoadAgents(const LoadOptions& o) {
  return std::make_unique<LoadAdapter>(o);
}
}  // namespace codl::bench
