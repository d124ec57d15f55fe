// A victim step's phase map as compact JSON text ({"read_s":0.0123,...}) for victim_steps.phases:
// thousands of steps per trial stay one row each, and SQLite's json_each() can still query it.
// Numbers are written so they parse back bit-exactly; NaN/±Inf (not JSON) as "NaN"/"Infinity"/
// "-Infinity" strings.
#pragma once

#include <map>
#include <string>

#include "lib/common/result.h"

namespace codl::store {

Result<std::string> EncodePhases(const std::map<std::string, double>& phases);
Result<std::map<std::string, double>> DecodePhases(const std::string& text);

}  // namespace codl::store
