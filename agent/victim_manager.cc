#include "agent/victim_manager.h"

#include <algorithm>
#include <utility>

#include "lib/rpc/records_proto.h"

namespace codl::agent {

// Registered while the victim runs, so that StopRunning reaches it; unregistered however the
// run ends. A victim registered after CancelAll starts cancelled.
class VictimManager::Registration {
 public:
  Registration(VictimManager* m, std::atomic<bool>* cancel) : m_(m), cancel_(cancel) {
    std::lock_guard<std::mutex> l(m_->running_mu_);
    *cancel_ = m_->cancel_all_.load();
    m_->running_.insert(cancel_);
  }
  ~Registration() {
    std::lock_guard<std::mutex> l(m_->running_mu_);
    m_->running_.erase(cancel_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  VictimManager* m_;
  std::atomic<bool>* cancel_;
};

VictimManager::VictimManager(const Clock* clock, const Placer* placer, VictimIdentity identity,
                             std::shared_ptr<VictimIdentities> uid_pool,
                             AntagonistManager* antagonists, TelemetryHub* telemetry)
    : clock_(clock),
      runner_(clock, placer, std::move(identity)),
      uid_pool_(std::move(uid_pool)),
      antagonists_(antagonists),
      telemetry_(telemetry) {}

int VictimManager::StopRunning() {
  std::lock_guard<std::mutex> l(running_mu_);
  for (auto* flag : running_) *flag = true;
  return static_cast<int>(running_.size());
}

void VictimManager::CancelAll() {
  cancel_all_ = true;
  StopRunning();
}

void VictimManager::WaitForStart(int64_t start_at_unix_ns, const std::atomic<bool>& cancel) const {
  if (start_at_unix_ns <= 0) return;
  // At most 5 s ahead: a wrong clock offset must not park a victim. StopAll sets `cancel`,
  // which ends the wait and then the run.
  const int64_t wait_ns =
      std::min<int64_t>(start_at_unix_ns - clock_->UnixNanos(), 5'000'000'000LL);
  if (wait_ns > 0) clock_->SleepFor(static_cast<double>(wait_ns) / 1e9, cancel);
}

void VictimManager::Publish(const std::string& trial_id, v1::TelemetryEvent event) const {
  if (trial_id.empty() || telemetry_ == nullptr) return;
  event.set_agent_unix_ns(clock_->UnixNanos());
  telemetry_->Publish(trial_id, event);
}

Result<VictimOutcome> VictimManager::Run(VictimRequest request) {
  experiment::VictimSpec& spec = request.spec;
  // The victim joins what the antagonists set up (e.g. the MPS server); its own env wins.
  if (antagonists_ != nullptr) {
    for (const auto& [k, v] : antagonists_->VictimEnvironment()) spec.env.emplace(k, v);
  }
  std::atomic<bool> cancel{false};
  Registration registration(this, &cancel);
  WaitForStart(request.start_at_unix_ns, cancel);
  // Its experiment's own uid (victim_uid_range), held until EndExperiment.
  std::optional<RunAs> run_as;
  if (uid_pool_) {
    auto id = uid_pool_->Acquire(request.experiment_id);
    if (!id.ok()) {
      ++failed_;
      return id.status().WithContext("victim could not start");
    }
    run_as = *id;
  }
  struct UidRelease {
    VictimIdentities* pool;
    const std::string& experiment;
    ~UidRelease() {
      if (pool != nullptr) pool->Done(experiment);
    }
  } release{uid_pool_.get(), request.experiment_id};
  const std::string& trial = request.trial_id;
  VictimOutcome o = runner_.Run(
      spec, &cancel,
      [&](const VictimStep& st) {
        v1::TelemetryEvent ev;
        *ev.mutable_victim_step() = rpc::ToProto(st);
        Publish(trial, std::move(ev));
      },
      [&](const VictimRunner::DatasetProgress& d) {
        v1::TelemetryEvent ev;
        ev.mutable_victim_dataset()->set_generated(d.generated);
        ev.mutable_victim_dataset()->set_total(d.total);
        ev.mutable_victim_dataset()->set_t_s(d.t_s);
        Publish(trial, std::move(ev));
      },
      run_as);
  (o.progress.ok ? ok_ : failed_) += 1;
  return o;
}

}  // namespace codl::agent
