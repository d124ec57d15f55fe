// FakeAgent: an AgentClient with no process and no socket, for the runner and registry tests.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/agent_client.h"
#include "lib/common/clock.h"

namespace codl::controller {

// A fake agent whose "victim" slows down by (1 + level of every running antagonist), so the
// runner's bookkeeping can be checked against a known slowdown.
class FakeAgent : public AgentClient {
 public:
  std::mutex mu;
  int calibrations = 0;
  double calibrate_s = 0;  // how long a calibration takes (real time)
  std::vector<v1::CalibrateRequest> calibrate_requests;
  std::vector<std::pair<double, double>> calibrate_windows;  // monotonic start, end
  std::map<std::string, double> running;                     // id -> target rate
  std::set<std::string> ever_started;
  int stops = 0;
  bool fail_start = false;
  int fail_next_starts = 0;  // the next this many starts fail (then they succeed)
  bool fail_victim = false;
  bool fail_stop = false;  // as an unreachable agent: the antagonist keeps running
  // RunVictim fails as a call to an agent that cannot be reached does (UNAVAILABLE).
  bool unreachable_victim = false;
  int victims = 0;
  double achieved_fraction = 1.0;  // of the target
  double peak = 1000;
  double victim_wall_s = 2.0;  // 10 antagonist samples (one per 0.2 s) fall in the victim's run
  // When set: the fraction of its target an antagonist reports as its n-th telemetry sample
  // (n = 0 at its start); else achieved_fraction.
  std::function<double(int n)> fraction_at_sample;
  std::map<std::string, int> polls;  // id -> GetAntagonist calls
  std::map<std::string, int64_t> started_ns;
  int64_t victim_started_ns = 0;
  const Clock* clock = nullptr;  // when set: victim_starts_s records its time
  // Per victim run: when it started on `clock`, with how many antagonists running.
  std::vector<std::pair<double, size_t>> victim_starts;
  std::vector<size_t> started_before_victim;  // per victim run: antagonists ever started
  // Telemetry like the agent's: every start sends its first sample to the open streams of its
  // trial, and each Tick() one more per running antagonist (a test ticks from its fake clock's
  // wait hook: one telemetry interval per wait). Off: OpenTelemetry returns nullptr, as an agent
  // without StreamTelemetry; GetAntagonist's answer is then each next sample.
  bool streams = true;
  int open_streams = 0;
  // EstimateSetup's answer (0: the default, negligible); the start times it was sent with.
  double setup_estimate_s = 0;
  std::vector<int64_t> start_at_ns;
  std::vector<double> start_timeouts;  // each start request's start_timeout_s

  void EstimateSetupAsync(const v1::InjectorSpec&, EstimateDone done) override {
    done(setup_estimate_s);
  }

  std::unique_ptr<TelemetryStream> OpenTelemetry(
      const std::string& trial_id,
      std::function<void(const v1::TelemetryEvent&)> on_event) override {
    std::lock_guard<std::mutex> l(mu);
    if (!streams) return nullptr;
    const int handle = next_stream_++;
    subscribers_[handle] = {trial_id, std::move(on_event)};
    ++open_streams;
    return std::make_unique<Stream>(this, handle);
  }

  Result<v1::CalibrateReply> Calibrate(const v1::CalibrateRequest& req) override {
    const double from = SystemClock::Get()->MonotonicSeconds();
    if (calibrate_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(calibrate_s));
    std::lock_guard<std::mutex> l(mu);
    calibrate_requests.push_back(req);
    calibrate_windows.emplace_back(from, SystemClock::Get()->MonotonicSeconds());
    ++calibrations;
    v1::CalibrateReply r;
    r.set_peak_rate(peak);
    r.set_unit("bytes/s");
    return r;
  }
  Result<v1::StartAntagonistReply> StartAntagonist(const v1::StartAntagonistRequest& req) override {
    std::lock_guard<std::mutex> l(mu);
    if (fail_start) return Err("codl-inject: option 'threads': 0 is out of range [1, 256]");
    if (fail_next_starts > 0 && fail_next_starts--)
      return Err("codl-inject: the page cache is full (a passing failure)");
    running[req.antagonist_id()] = req.spec().rate();
    ever_started.insert(req.antagonist_id());
    start_at_ns.push_back(req.start_at_unix_ns());
    start_timeouts.push_back(req.start_timeout_s());
    v1::StartAntagonistReply r;
    r.set_pid(1234);
    r.set_started_unix_ns(SystemClock::Get()->UnixNanos());
    started_ns[req.antagonist_id()] = r.started_unix_ns();
    if (streams) SendSample(req.antagonist_id(), NextSample(req.antagonist_id()));
    return r;
  }
  Result<v1::GetAntagonistReply> GetAntagonist(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu);
    v1::GetAntagonistReply r;
    r.set_running(running.count(id) > 0);
    r.set_unit("bytes/s");
    r.set_samples(3);
    r.set_target(running[id]);
    ++polls[id];
    r.set_last_achieved(streams ? last_achieved_[id] : NextSample(id));
    return r;
  }
  Result<v1::StopAntagonistReply> StopAntagonist(const v1::StopAntagonistRequest& req) override {
    std::lock_guard<std::mutex> l(mu);
    ++stops;
    if (fail_stop) return Err("agent unavailable");
    double target = running[req.antagonist_id()];
    running.erase(req.antagonist_id());
    v1::StopAntagonistReply r;
    r.set_unit("bytes/s");
    r.set_target_rate(target);
    r.set_achieved_rate(target * achieved_fraction);
    // One sample per 0.2 s from the antagonist's start to the end of the victim's run.
    const double until_s =
        (victim_started_ns - started_ns[req.antagonist_id()]) / 1e9 + victim_wall_s;
    for (double t = 0.2; t <= until_s + 1e-9; t += 0.2) {
      auto* s = r.add_samples();
      s->set_t_s(t);
      s->set_achieved(target * achieved_fraction);
      s->set_target(target);
    }
    return r;
  }
  Result<v1::RunVictimReply> RunVictim(const v1::RunVictimRequest&, double) override {
    std::lock_guard<std::mutex> l(mu);
    ++victims;
    if (unreachable_victim) {
      return Unavailable("agent fake RunVictim: unavailable: failed to connect to all addresses");
    }
    v1::RunVictimReply r;
    r.set_started_unix_ns(SystemClock::Get()->UnixNanos());
    victim_started_ns = r.started_unix_ns();
    started_before_victim.push_back(ever_started.size());
    if (fail_victim) {
      r.set_ok(false);
      r.set_error("victim exited with status 3");
      r.set_exit_code(3);
      r.set_stderr_tail("boom");
      return r;
    }
    double slow = 1;
    for (const auto& [id, rate] : running) slow += rate / peak;
    r.set_ok(true);
    r.set_metric(0.1 * slow);
    r.set_wall_s(victim_wall_s);
    (*r.mutable_phase_medians())["compute_s"] = 0.05;
    (*r.mutable_phase_medians())["read_s"] = 0.05 * slow;
    if (clock) victim_starts.emplace_back(clock->MonotonicSeconds(), running.size());
    return r;
  }
  Status StopAll(const std::string&) override { return Status::Ok(); }

  // One telemetry interval: the next sample of every running antagonist, streamed.
  void Tick() {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& [id, rate] : running) SendSample(id, NextSample(id));
  }

 private:
  class Stream : public TelemetryStream {
   public:
    Stream(FakeAgent* agent, int handle) : agent_(agent), handle_(handle) {}
    ~Stream() override {
      std::lock_guard<std::mutex> l(agent_->mu);
      agent_->subscribers_.erase(handle_);
      --agent_->open_streams;
    }

   private:
    FakeAgent* agent_;
    int handle_;
  };

  // Under mu: the achieved rate of `id`'s next sample.
  double NextSample(const std::string& id) {
    const int n = samples_sent_[id]++;
    const double fraction = fraction_at_sample ? fraction_at_sample(n) : achieved_fraction;
    return last_achieved_[id] = running[id] * fraction;
  }

  // Under mu, like the agent's TelemetryHub: to every stream whose trial id prefixes `id`.
  void SendSample(const std::string& id, double achieved) {
    v1::TelemetryEvent ev;
    ev.mutable_antagonist()->set_antagonist_id(id);
    ev.mutable_antagonist()->mutable_sample()->set_achieved(achieved);
    for (auto& [h, sub] : subscribers_) {
      if (id.rfind(sub.first, 0) == 0) sub.second(ev);
    }
  }

  int next_stream_ = 1;
  std::map<std::string, int> samples_sent_;
  std::map<std::string, double> last_achieved_;
  std::map<int, std::pair<std::string, std::function<void(const v1::TelemetryEvent&)>>>
      subscribers_;
};

}  // namespace codl::controller
