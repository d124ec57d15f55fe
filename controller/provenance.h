// Provenance: what a run's figures depend on besides the experiment file, kept with the
// experiment so that a run can be reproduced or its differences explained (docs/validity.md,
// "Provenance"; the JSON layout is in docs/results.md). The runner fills it in as the experiment
// goes and saves it to the store after every step, so an interrupted run keeps what it had.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codl/v1/controller.pb.h"
#include "lib/common/result.h"
#include "lib/store/store.h"

namespace codl::controller {

// A short, stable digest of the parts of a node snapshot that bear on an injector's peak
// (kernel, CPU, governor and limits, memory, GPUs, the agent's CoDL version). "" for an empty
// snapshot (an agent too old to send one).
std::string NodeFingerprint(const v1::NodeSnapshot& node);

// The snapshot as a JSON object (the "nodes" entries of the provenance).
nlohmann::json NodeJson(const v1::NodeSnapshot& node);

class Provenance {
 public:
  Provenance(store::Store* store, std::string experiment_id);

  void Started(int64_t unix_ms, uint64_t seed, bool seed_explicit);
  // A resumed experiment: carries on from the stored object `previous_json` and appends to its
  // "resumptions" list when, from what state and error, how many trials were kept, and (as
  // AddNode is called) each node's fingerprint now.
  void Resumed(const std::string& previous_json, int64_t unix_ms, const std::string& previous_state,
               const std::string& previous_error, int trials_kept);
  void Finished(int64_t unix_ms);
  void AddNode(const std::string& node, const v1::NodeSnapshot& snapshot);
  // Where the victim ran: its nodes in rank order (one unless victim.distributed) and, when
  // distributed, the MASTER_ADDR its ranks met at ("victim": {"nodes": [..], "master_addr"}).
  void SetVictimNodes(const std::vector<std::string>& nodes, const std::string& master_addr);
  // One calibration used: `reason` says why it was (re)measured, or "cached".
  void AddCalibration(const std::string& antagonist, const CalibrationRecord& c,
                      const std::string& reason);
  void AddWarmup(int run, double wall_s, bool ok, const std::string& error);
  // The victim node's 1-minute load average when the trial started (< 0: unknown -> null).
  void AddTrial(int index, double load_avg_1m);
  // A trial run again because agents were lost in it ("retries": trial index, the agents, the
  // error of the attempt that was dropped, seconds until they were back).
  void AddRetry(int index, const std::vector<std::string>& agents, const std::string& error,
                double back_after_s, int64_t unix_ms);

  const nlohmann::json& json() const { return j_; }
  // Writes the whole object; a failure is logged, not fatal (the trials matter more).
  void Save();

 private:
  store::Store* store_;
  std::string experiment_id_;
  nlohmann::json j_;
};

}  // namespace codl::controller
