#include "lib/store/phases_json.h"

#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>

namespace codl::store {

Result<std::string> EncodePhases(const std::map<std::string, double>& phases) {
  if (phases.empty()) return std::string("{}");
  try {
    nlohmann::json obj = nlohmann::json::object();
    for (const auto& [name, v] : phases) {
      if (std::isnan(v)) {
        obj[name] = "NaN";
      } else if (std::isinf(v)) {
        obj[name] = v > 0 ? "Infinity" : "-Infinity";
      } else {
        obj[name] = v;  // nlohmann prints the shortest text that round-trips
      }
    }
    return obj.dump();
  } catch (const std::exception& e) {  // e.g. a phase name that is not valid UTF-8
    return Err(std::string("cannot encode victim phases as JSON: ") + e.what());
  }
}

Result<std::map<std::string, double>> DecodePhases(const std::string& text) {
  std::map<std::string, double> out;
  if (text.empty() || text == "{}") return out;
  try {
    nlohmann::json obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object()) return Err("victim phases are not a JSON object: " + text.substr(0, 80));
    for (const auto& [name, v] : obj.items()) {
      if (v.is_number()) {
        out[name] = v.get<double>();
      } else if (v.is_string() && v.get_ref<const std::string&>() == "NaN") {
        out[name] = std::numeric_limits<double>::quiet_NaN();
      } else if (v.is_string() && v.get_ref<const std::string&>() == "Infinity") {
        out[name] = std::numeric_limits<double>::infinity();
      } else if (v.is_string() && v.get_ref<const std::string&>() == "-Infinity") {
        out[name] = -std::numeric_limits<double>::infinity();
      } else {
        return Err("victim phase '" + name + "' is not a number: " + v.dump());
      }
    }
  } catch (const std::exception& e) {
    return Err(std::string("cannot decode victim phases: ") + e.what());
  }
  return out;
}

}  // namespace codl::store
