#include "lib/report/provenance.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "lib/report/svg.h"

namespace codl::report {
namespace {

using Json = nlohmann::json;

// A field as text, "—" when absent or null (older runs lack the newer fields).
std::string Text(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "&mdash;";
  const Json& v = j[key];
  return Escape(v.is_string() ? v.get<std::string>() : v.dump());
}

std::string Row(const std::string& name, const std::string& value) {
  return "<tr><th>" + name + "</th><td>" + value + "</td></tr>\n";
}

std::string Mhz(const Json& n, const char* key) {
  if (!n.contains(key) || !n[key].is_number() || n[key].get<double>() <= 0) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", n[key].get<double>() / 1000);
  return buf;
}

std::string Nodes(const Json& nodes) {
  if (!nodes.is_object() || nodes.empty()) return "";
  std::string h =
      "<table>\n<tr><th>node</th><th>kernel</th><th>CPU</th><th>governor, MHz</th>"
      "<th>memory</th><th>GPUs</th><th>CoDL</th></tr>\n";
  for (const auto& [name, n] : nodes.items()) {
    char mem[32] = "&mdash;";
    if (n.contains("memory_bytes") && n["memory_bytes"].is_number()) {
      std::snprintf(mem, sizeof mem, "%.1f GiB", n["memory_bytes"].get<double>() / (1 << 30));
    }
    std::string gpus;
    if (n.contains("gpu") && n["gpu"].is_object()) {
      for (const auto& [k, v] : n["gpu"].items()) {
        gpus += (gpus.empty() ? "" : ", ") + Escape(k) + "=" +
                Escape(v.is_string() ? v.get<std::string>() : v.dump());
      }
    }
    h += "<tr><td><code>" + Escape(name) + "</code></td><td>" + Text(n, "kernel") + "</td><td>" +
         Text(n, "cpu_model") + " &times; " + Text(n, "cpu_count") + "</td><td>" +
         Text(n, "governor") + ", " + Mhz(n, "cpu_min_khz") + "&ndash;" + Mhz(n, "cpu_max_khz") +
         "</td><td>" + mem + "</td><td>" + (gpus.empty() ? "&mdash;" : gpus) + "</td><td>" +
         Text(n, "codl_version") + "</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string Calibrations(const Json& cals) {
  if (!cals.is_array() || cals.empty()) return "";
  std::string h =
      "<table>\n<tr><th>antagonist</th><th>node</th><th>peak</th><th>measured</th>"
      "<th>source</th></tr>\n";
  for (const auto& c : cals) {
    h += "<tr><td>" + Text(c, "antagonist") + "</td><td><code>" + Text(c, "node") +
         "</code></td><td>" + Text(c, "peak_rate") + " " + Text(c, "unit") + "</td><td>" +
         Text(c, "measured_unix_ms") + "</td><td>" + Text(c, "source") + "</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string Warmups(const Json& runs) {
  if (!runs.is_array() || runs.empty()) return "";
  std::string h = "<p>Warm-up runs (antagonists off, never analysed):";
  for (const auto& w : runs) {
    h += " #" + Text(w, "run") + " " + Text(w, "wall_s") + " s" +
         (w.value("ok", false) ? "" : " (failed: " + Text(w, "error") + ")") + ";";
  }
  return h + "</p>\n";
}

std::string TrialLoads(const Json& trials) {
  if (!trials.is_array() || trials.empty()) return "";
  std::string h = "<p>1-minute load average of the victim node at each trial's start:";
  for (const auto& t : trials) h += " " + Text(t, "index") + ": " + Text(t, "load_avg_1m") + ";";
  return h + "</p>\n";
}

}  // namespace

std::string RenderProvenance(const std::string& provenance_json) {
  const Json p = Json::parse(provenance_json, nullptr, false);
  if (p.is_discarded() || !p.is_object() || p.empty()) return "";
  std::string h = "<table>\n";
  h += Row("CoDL version (controller)", Text(p, "codl_version"));
  h += Row("seed", Text(p, "seed") + " (" + Text(p, "seed_source") + ")");
  h += Row("started (Unix ms)", Text(p, "started_unix_ms"));
  h += Row("finished (Unix ms)", Text(p, "finished_unix_ms"));
  h += "</table>\n";
  return h + Nodes(p.value("nodes", Json())) + Calibrations(p.value("calibrations", Json())) +
         Warmups(p.value("warmup", Json())) + TrialLoads(p.value("trials", Json()));
}

}  // namespace codl::report
