#include "agent/progress_parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace codl::agent {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The whole text must be one finite decimal number ("0.25", "1e-3"); "12ms" or "inf" are not.
bool ParseFullNumber(const std::string& text, double* out) {
  if (text.empty()) return false;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string SignalText(int sig) {
  const char* name = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
}

// Phase names travel into the database, CSV cells, the terminal table, the HTML report and
// Prometheus labels: victim output may only name a phase with [A-Za-z0-9_.-], at most 64 bytes
// (no control characters, no CSV formula, no markup). Other phases are dropped.
bool ValidPhaseName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) {
      return false;
    }
  }
  return std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_';
}

std::string Lines(int n) { return std::to_string(n) + (n == 1 ? " line" : " lines"); }

}  // namespace

ProgressParser::ProgressParser(const codl::experiment::ProgressSpec& spec, int warmup_steps,
                               bool keep_steps)
    : spec_(spec), warmup_steps_(std::max(0, warmup_steps)), keep_steps_(keep_steps) {
  if (spec_.format != codl::experiment::ProgressSpec::Format::kRegex) return;
  auto re = codl::experiment::CompileProgressPattern(spec_.pattern);
  if (re.ok()) {
    regex_ = std::move(*re);
  } else {
    regex_error_ = "progress pattern '" + spec_.pattern + "': " + re.error();
  }
}

ProgressParser::LineKind ProgressParser::OnStdoutLine(std::string_view line, double t_s) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return LineKind::kOther;
  ++lines_;
  switch (spec_.format) {
    case codl::experiment::ProgressSpec::Format::kJsonl: return OnJsonLine(line, t_s);
    case codl::experiment::ProgressSpec::Format::kRegex:
      if (regex_error_.empty()) {
        if (LineKind k = OnRegexLine(line, t_s); k != LineKind::kOther) return k;
      }
      return OnOtherLine(line, t_s);
    case codl::experiment::ProgressSpec::Format::kWall: return OnOtherLine(line, t_s);
  }
  return LineKind::kOther;
}

ProgressParser::LineKind ProgressParser::OnOtherLine(std::string_view line, double t_s) {
  if (line.find("\"dataset\"") == std::string_view::npos) return LineKind::kOther;  // cheap
  const auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return LineKind::kOther;
  return OnDatasetRecord(j, t_s).value_or(LineKind::kOther);
}

std::optional<ProgressParser::LineKind> ProgressParser::OnDatasetRecord(
    const nlohmann::ordered_json& j, double t_s) {
  auto flag = j.find("dataset");
  if (flag == j.end() || !flag->is_boolean() || !flag->get<bool>()) return std::nullopt;
  auto generated = j.find("generated"), total = j.find("total");
  const bool valid = generated != j.end() && total != j.end() && generated->is_number_integer() &&
                     total->is_number_integer() && generated->get<int64_t>() >= 0 &&
                     generated->get<int64_t>() <= total->get<int64_t>();
  if (!valid) {
    ++malformed_;
    return LineKind::kOther;
  }
  dataset_ = {generated->get<int64_t>(), total->get<int64_t>(), t_s};
  return LineKind::kDataset;
}

ProgressParser::LineKind ProgressParser::OnJsonLine(std::string_view line, double t_s) {
  // Ordered: a step's phases keep the victim's order (a plain json object sorts its keys).
  const auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    ++malformed_;
    return LineKind::kOther;
  }
  if (auto dataset = OnDatasetRecord(j, t_s)) return *dataset;
  auto summary = j.find("summary");
  if (summary != j.end() && summary->is_boolean() && summary->get<bool>()) return LineKind::kOther;
  auto field = j.find(spec_.field);
  if (field == j.end()) return LineKind::kOther;  // other records (config, logs) are not steps
  if (!field->is_number() || field->get<double>() < 0 || !std::isfinite(field->get<double>())) {
    ++malformed_;
    return LineKind::kOther;
  }
  codl::VictimStep step;
  step.step_time_s = field->get<double>();
  step.t_s = t_s;
  auto number = j.find("step");
  step.step =
      number != j.end() && number->is_number_integer() ? number->get<int64_t>() : parsed_steps_;
  std::vector<std::string> names;
  auto phases = j.find("phases");
  if (phases != j.end() && phases->is_object()) {
    for (const auto& [name, value] : phases->items()) {
      if (step.phases.size() >= kMaxPhases) break;
      if (ValidPhaseName(name) && value.is_number() && std::isfinite(value.get<double>()) &&
          step.phases.emplace(name, value.get<double>()).second) {
        names.push_back(name);
      }
    }
  }
  auto warmup = j.find("warmup");
  return AddStep(std::move(step), warmup != j.end() && warmup->is_boolean() && warmup->get<bool>(),
                 names)
             ? LineKind::kStep
             : LineKind::kOther;
}

ProgressParser::LineKind ProgressParser::OnRegexLine(std::string_view line, double t_s) {
  std::string metric;
  if (!re2::RE2::PartialMatch(line, *regex_, &metric)) return LineKind::kOther;
  double v;
  if (!ParseFullNumber(metric, &v) || v < 0) {
    ++malformed_;
    return LineKind::kOther;
  }
  codl::VictimStep step;
  step.step = parsed_steps_;
  step.step_time_s = v;
  step.t_s = t_s;
  return AddStep(std::move(step), false, {}) ? LineKind::kStep : LineKind::kOther;
}

bool ProgressParser::AddStep(codl::VictimStep step, bool marked_warmup,
                             const std::vector<std::string>& phases) {
  if (!keep_steps_) {
    steps_.clear();  // a workload's stream: only the latest step is kept
  } else if (steps_.size() >= kMaxSteps) {
    ++dropped_steps_;
    return false;
  }
  step.warmup = marked_warmup || parsed_steps_ < warmup_steps_;
  ++parsed_steps_;
  steps_.push_back(std::move(step));
  for (const auto& name : phases) {
    if (phase_seen_.insert(name).second) phase_order_.push_back(name);
  }
  return true;
}

ProgressParser::Outcome ProgressParser::Finish(int exit_code, bool timed_out, double wall_s,
                                               const std::string& /*stderr_tail*/) const {
  using Format = codl::experiment::ProgressSpec::Format;
  Outcome out;
  out.steps = steps_;
  out.lines = lines_;
  out.malformed_lines = malformed_;
  out.dropped_steps = dropped_steps_;
  const std::string reported = spec_.format == Format::kWall
                                   ? ""
                                   : " (" + std::to_string(steps_.size()) +
                                         (steps_.size() == 1 ? " step" : " steps") + " reported)";
  if (timed_out) {
    out.error = "victim timed out after " + Seconds(wall_s) + reported;
    if (exit_code < 0) out.error += "; then killed by " + SignalText(-exit_code);
    else if (exit_code > 0) out.error += "; then exited with status " + std::to_string(exit_code);
    return out;
  }
  if (exit_code < 0) {
    out.error = "victim killed by " + SignalText(-exit_code) + reported;
    return out;
  }
  if (exit_code > 0) {
    out.error = "victim exited with status " + std::to_string(exit_code) + reported;
    return out;
  }
  if (spec_.format == Format::kWall) {
    out.ok = true;
    out.value_s = wall_s;
    return out;
  }
  if (!regex_error_.empty()) {
    out.error = regex_error_;
    return out;
  }
  if (steps_.empty()) {
    std::string detail = spec_.format == Format::kJsonl
                             ? "field '" + spec_.field + "' not found in " + Lines(lines_)
                             : "pattern '" + spec_.pattern + "' matched none of " + Lines(lines_);
    if (malformed_ > 0) {
      detail += "; " + std::to_string(malformed_) +
                (spec_.format == Format::kJsonl ? " not JSON objects or with a non-numeric field"
                                                : " matched without a number in the capture group");
    }
    out.error = "victim printed no parsable progress (" + detail + ")";
    return out;
  }
  std::vector<double> metric;
  std::map<std::string, std::vector<double>> phases;
  for (const codl::VictimStep& s : steps_) {
    if (s.warmup) continue;
    metric.push_back(s.step_time_s);
    for (const auto& [name, v] : s.phases) phases[name].push_back(v);
  }
  if (metric.empty()) {
    out.error = "only warmup steps were reported (" + std::to_string(steps_.size()) +
                " steps, warmup_steps " + std::to_string(warmup_steps_) + ")";
    return out;
  }
  out.ok = true;
  out.value_s = Median(std::move(metric));
  for (auto& [name, values] : phases) out.phase_medians[name] = Median(std::move(values));
  for (const auto& name : phase_order_) {
    if (out.phase_medians.count(name)) out.phase_order.push_back(name);
  }
  return out;
}

}  // namespace codl::agent
