#include "lib/rpc/records_json.h"

#include <nlohmann/json.hpp>

namespace codl::rpc {

using nlohmann::json;

std::string ExperimentToJson(const ExperimentRecord& e) {
  json j = {{"id", e.id},           {"name", e.name},
            {"source_path", e.source_path}, {"yaml", e.yaml},
            {"state", ToString(e.state)},   {"error", e.error},
            {"seed", e.seed},       {"total_trials", e.total_trials},
            {"created_unix_ms", e.created_unix_ms}, {"finished_unix_ms", e.finished_unix_ms}};
  return j.dump();
}

Result<ExperimentRecord> ExperimentFromJson(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Err("malformed experiment JSON from the controller");
  ExperimentRecord e;
  e.id = j.value("id", "");
  e.name = j.value("name", "");
  e.source_path = j.value("source_path", "");
  e.yaml = j.value("yaml", "");
  ParseExperimentState(j.value("state", "queued"), &e.state);
  e.error = j.value("error", "");
  e.seed = j.value("seed", uint64_t{0});
  e.total_trials = j.value("total_trials", 0);
  e.created_unix_ms = j.value("created_unix_ms", int64_t{0});
  e.finished_unix_ms = j.value("finished_unix_ms", int64_t{0});
  return e;
}

std::string TrialsToJson(const std::vector<TrialRecord>& trials) {
  json arr = json::array();
  for (const auto& t : trials) {
    json steps = json::array();
    for (const auto& s : t.steps) {
      steps.push_back({{"step", s.step}, {"step_time_s", s.step_time_s}, {"phases", s.phases},
                       {"t_s", s.t_s}, {"warmup", s.warmup}});
    }
    json ants = json::array();
    for (const auto& a : t.antagonists) {
      json samples = json::array();
      for (const auto& s : a.samples) samples.push_back({s.t_s, s.achieved, s.target});
      ants.push_back({{"name", a.name}, {"injector", a.injector}, {"node", a.node},
                      {"level", a.level}, {"target_rate", a.target_rate},
                      {"achieved_rate", a.achieved_rate}, {"achieved_cov", a.achieved_cov},
                      {"peak_rate", a.peak_rate}, {"unit", a.unit},
                      {"reached_target", a.reached_target}, {"start_skew_s", a.start_skew_s},
                      {"samples", samples}});
    }
    arr.push_back({{"experiment_id", t.experiment_id}, {"index", t.index},
                   {"repetition", t.repetition}, {"baseline", t.baseline},
                   {"pairing", t.pairing}, {"state", ToString(t.state)}, {"error", t.error},
                   {"exit_code", t.exit_code}, {"stderr_tail", t.stderr_tail},
                   {"victim_node", t.victim_node}, {"metric", t.metric}, {"wall_s", t.wall_s},
                   {"phase_medians", t.phase_medians}, {"started_unix_ms", t.started_unix_ms},
                   {"finished_unix_ms", t.finished_unix_ms}, {"steps", steps},
                   {"antagonists", ants}});
  }
  return arr.dump();
}

Result<std::vector<TrialRecord>> TrialsFromJson(const std::string& text) {
  auto arr = json::parse(text, nullptr, false);
  if (!arr.is_array()) return Err("malformed trials JSON from the controller");
  std::vector<TrialRecord> out;
  try {
    for (const auto& j : arr) {
      TrialRecord t;
      t.experiment_id = j.at("experiment_id").get<std::string>();
      t.index = j.at("index").get<int>();
      t.repetition = j.at("repetition").get<int>();
      t.baseline = j.at("baseline").get<bool>();
      t.pairing = j.at("pairing").get<std::string>();
      ParseTrialState(j.at("state").get<std::string>(), &t.state);
      t.error = j.at("error").get<std::string>();
      t.exit_code = j.at("exit_code").get<int>();
      t.stderr_tail = j.at("stderr_tail").get<std::string>();
      t.victim_node = j.at("victim_node").get<std::string>();
      t.metric = j.at("metric").get<double>();
      t.wall_s = j.at("wall_s").get<double>();
      t.phase_medians = j.at("phase_medians").get<std::map<std::string, double>>();
      t.started_unix_ms = j.at("started_unix_ms").get<int64_t>();
      t.finished_unix_ms = j.at("finished_unix_ms").get<int64_t>();
      for (const auto& s : j.at("steps")) {
        VictimStep v;
        v.step = s.at("step").get<int64_t>();
        v.step_time_s = s.at("step_time_s").get<double>();
        v.phases = s.at("phases").get<std::map<std::string, double>>();
        v.t_s = s.at("t_s").get<double>();
        v.warmup = s.at("warmup").get<bool>();
        t.steps.push_back(std::move(v));
      }
      for (const auto& a : j.at("antagonists")) {
        AntagonistResult r;
        r.name = a.at("name").get<std::string>();
        r.injector = a.at("injector").get<std::string>();
        r.node = a.at("node").get<std::string>();
        r.level = a.at("level").get<double>();
        r.target_rate = a.at("target_rate").get<double>();
        r.achieved_rate = a.at("achieved_rate").get<double>();
        r.achieved_cov = a.at("achieved_cov").get<double>();
        r.peak_rate = a.at("peak_rate").get<double>();
        r.unit = a.at("unit").get<std::string>();
        r.reached_target = a.at("reached_target").get<bool>();
        r.start_skew_s = a.at("start_skew_s").get<double>();
        for (const auto& s : a.at("samples")) {
          r.samples.push_back({s.at(0).get<double>(), s.at(1).get<double>(), s.at(2).get<double>()});
        }
        t.antagonists.push_back(std::move(r));
      }
      out.push_back(std::move(t));
    }
  } catch (const json::exception& e) {
    return Err(std::string("malformed trials JSON from the controller: ") + e.what());
  }
  return out;
}

}  // namespace codl::rpc
