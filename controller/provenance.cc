#include "controller/provenance.h"

#include <cstdio>

#include <spdlog/spdlog.h>

#include "lib/common/version.h"

namespace codl::controller {

std::string NodeFingerprint(const v1::NodeSnapshot& node) {
  if (node.ByteSizeLong() == 0) return "";
  // FNV-1a over a canonical text: stable across processes and builds (std::hash is not
  // promised to be), and the map is walked in key order.
  std::string text = node.kernel() + "\n" + node.cpu_model() + "\n" +
                     std::to_string(node.cpu_count()) + "\n" + node.governor() + "\n" +
                     std::to_string(node.cpu_min_khz()) + "\n" +
                     std::to_string(node.cpu_max_khz()) + "\n" +
                     std::to_string(node.memory_bytes()) + "\n" + node.codl_version() + "\n";
  std::map<std::string, std::string> gpu(node.gpu_labels().begin(), node.gpu_labels().end());
  for (const auto& [k, v] : gpu) text += k + "=" + v + "\n";
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

nlohmann::json NodeJson(const v1::NodeSnapshot& node) {
  nlohmann::json n;
  n["kernel"] = node.kernel();
  n["cpu_model"] = node.cpu_model();
  n["cpu_count"] = node.cpu_count();
  n["governor"] = node.governor();
  n["cpu_min_khz"] = node.cpu_min_khz();
  n["cpu_max_khz"] = node.cpu_max_khz();
  n["memory_bytes"] = node.memory_bytes();
  n["gpu"] = nlohmann::json::object();
  for (const auto& [k, v] : node.gpu_labels()) n["gpu"][k] = v;
  n["codl_version"] = node.codl_version();
  n["fingerprint"] = NodeFingerprint(node);
  return n;
}

Provenance::Provenance(store::Store* store, std::string experiment_id)
    : store_(store), experiment_id_(std::move(experiment_id)) {
  j_["codl_version"] = CodlVersion();
  j_["nodes"] = nlohmann::json::object();
  j_["calibrations"] = nlohmann::json::array();
  j_["warmup"] = nlohmann::json::array();
  j_["trials"] = nlohmann::json::array();
}

void Provenance::Started(int64_t unix_ms, uint64_t seed, bool seed_explicit) {
  j_["started_unix_ms"] = unix_ms;
  j_["seed"] = seed;
  j_["seed_source"] = seed_explicit ? "explicit" : "drawn";
}

void Provenance::Resumed(const std::string& previous_json, int64_t unix_ms,
                         const std::string& previous_state, const std::string& previous_error,
                         int trials_kept) {
  nlohmann::json previous =
      nlohmann::json::parse(previous_json, nullptr, /*allow_exceptions=*/false);
  // The top-level codl_version stays the first run's; each resumption names its own build.
  if (previous.is_object()) {
    for (auto& [k, v] : previous.items()) j_[k] = v;
  }
  if (!j_.contains("resumptions") || !j_["resumptions"].is_array())
    j_["resumptions"] = nlohmann::json::array();
  j_["resumptions"].push_back({{"unix_ms", unix_ms},
                               {"previous_state", previous_state},
                               {"previous_error", previous_error},
                               {"trials_kept", trials_kept},
                               {"codl_version", CodlVersion()},
                               {"nodes", nlohmann::json::object()}});
  for (const char* list : {"calibrations", "warmup", "trials"}) {
    if (!j_.contains(list) || !j_[list].is_array()) j_[list] = nlohmann::json::array();
  }
  if (!j_.contains("nodes") || !j_["nodes"].is_object()) j_["nodes"] = nlohmann::json::object();
}

void Provenance::Finished(int64_t unix_ms) { j_["finished_unix_ms"] = unix_ms; }

void Provenance::AddNode(const std::string& node, const v1::NodeSnapshot& snapshot) {
  j_["nodes"][node] = NodeJson(snapshot);
  if (j_.contains("resumptions") && !j_["resumptions"].empty()) {
    j_["resumptions"].back()["nodes"][node] = NodeFingerprint(snapshot);
  }
}

void Provenance::SetVictimNodes(const std::vector<std::string>& nodes,
                                const std::string& master_addr) {
  j_["victim"] = {{"nodes", nodes}, {"distributed", nodes.size() > 1}};
  if (!master_addr.empty()) j_["victim"]["master_addr"] = master_addr;
}

void Provenance::AddCalibration(const std::string& antagonist, const CalibrationRecord& c,
                                const std::string& reason) {
  j_["calibrations"].push_back({{"antagonist", antagonist},
                                {"node", c.node},
                                {"injector", c.injector},
                                {"options", c.options_key},
                                {"peak_rate", c.peak_rate},
                                {"unit", c.unit},
                                {"measured_unix_ms", c.measured_unix_ms},
                                {"node_fingerprint", c.node_fingerprint},
                                {"source", reason}});
}

void Provenance::AddWarmup(int run, double wall_s, bool ok, const std::string& error) {
  j_["warmup"].push_back({{"run", run}, {"wall_s", wall_s}, {"ok", ok}, {"error", error}});
}

void Provenance::AddTrial(int index, double load_avg_1m) {
  nlohmann::json t = {{"index", index}};
  t["load_avg_1m"] = load_avg_1m >= 0 ? nlohmann::json(load_avg_1m) : nlohmann::json();
  j_["trials"].push_back(std::move(t));
}

void Provenance::AddRetry(int index, const std::vector<std::string>& agents,
                          const std::string& error, double back_after_s, int64_t unix_ms) {
  j_["retries"].push_back({{"trial", index},
                           {"agents", agents},
                           {"error", error},
                           {"back_after_s", back_after_s},
                           {"unix_ms", unix_ms}});
}

void Provenance::Save() {
  // error_handler replace: an odd byte in a label must not lose the whole record.
  const std::string text = j_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (Status s = store_->SetProvenance(experiment_id_, text); !s.ok()) {
    spdlog::error("[{}] saving provenance: {}", experiment_id_, s.error());
  }
}

}  // namespace codl::controller
