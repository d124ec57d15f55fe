#include "lib/analysis/trace_merge.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace codl::experiment {
namespace {

using TraceJson = nlohmann::json;

// The pid the counter tracks go under: one process of their own in the trace viewer.
constexpr int64_t kAntagonistsPid = 1'000'000'001;

// End of the first codl.step#K range, in the trace's microseconds, and its K.
std::optional<std::pair<int64_t, double>> FirstStepEnd(const TraceJson& events) {
  std::optional<std::pair<int64_t, double>> first;
  double first_ts = 0;
  for (const TraceJson& ev : events) {
    if (!ev.is_object()) continue;
    const auto name = ev.find("name");
    const auto ts = ev.find("ts");
    const auto dur = ev.find("dur");
    if (name == ev.end() || !name->is_string() || ts == ev.end() || !ts->is_number() ||
        dur == ev.end() || !dur->is_number())
      continue;
    const std::string& n = name->get_ref<const std::string&>();
    constexpr std::string_view kPrefix = "codl.step#";
    if (n.rfind(kPrefix, 0) != 0) continue;
    char* end = nullptr;
    const long long k = std::strtoll(n.c_str() + kPrefix.size(), &end, 10);
    if (end == n.c_str() + kPrefix.size() || *end != '\0') continue;
    const double start = ts->get<double>();
    if (!first || start < first_ts) {
      first_ts = start;
      first = std::make_pair(static_cast<int64_t>(k), start + dur->get<double>());
    }
  }
  return first;
}

}  // namespace

Result<MergedTrace> MergeTraceWithAntagonists(const std::string& trace_json,
                                              const TrialRecord& trial) {
  TraceJson trace = TraceJson::parse(trace_json, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded()) return InvalidArgument("the stored trace is not JSON");
  if (trace.is_array()) trace = TraceJson{{"traceEvents", std::move(trace)}};
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    return InvalidArgument("the stored trace has no \"traceEvents\" array (not a Chrome trace)");
  TraceJson& events = trace["traceEvents"];
  MergedTrace out;
  const auto step = FirstStepEnd(events);
  const VictimStep* recorded = nullptr;
  if (step) {
    for (const VictimStep& s : trial.steps) {
      if (s.step == step->first) recorded = &s;
    }
  }
  if (!step || !recorded) {
    out.note = step ? "step " + std::to_string(step->first) +
                          " of the trace is not among the trial's recorded steps: no antagonist "
                          "counters added (the clocks cannot be aligned)"
                    : "the trace has no codl.step#K range (not written by `python3 -m "
                      "codl.run`): no antagonist counters added";
    out.json = trace.dump();
    return out;
  }
  const double offset_us = step->second - recorded->t_s * 1e6;
  bool any = false;
  for (const AntagonistResult& a : trial.antagonists) {
    const std::string track = a.name + " achieved (" + (a.unit.empty() ? "rate" : a.unit) + ")" +
                              (a.node.empty() ? "" : " on " + a.node);
    for (const RateSample& r : a.samples) {
      if (!std::isfinite(r.t_s) || !std::isfinite(r.achieved)) continue;
      TraceJson args = {{"achieved", r.achieved}};
      if (std::isfinite(r.target) && r.target > 0) args["target"] = r.target;
      events.push_back({{"name", track},
                        {"ph", "C"},
                        {"ts", offset_us + r.t_s * 1e6},
                        {"pid", kAntagonistsPid},
                        {"tid", 0},
                        {"args", std::move(args)}});
      ++out.counter_events;
      any = true;
    }
  }
  if (any) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", kAntagonistsPid},
                      {"args", {{"name", "CoDL antagonists (" + trial.pairing + ")"}}}});
  }
  out.note = "aligned on the end of step " + std::to_string(step->first) + " (" +
             std::to_string(out.counter_events) + " antagonist samples added)";
  out.json = trace.dump();
  return out;
}

}  // namespace codl::experiment
