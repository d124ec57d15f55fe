// Typed values on top of the strict reader (yaml_reader.h): the one place that decides how a
// YAML scalar becomes a bool, an integer, a number, a duration or a size, for experiment files
// and daemon config files alike. Every reader throws YamlError at the offending node; `path`
// names the field in messages ("order.randomize", "labels.rack").
//
// Quoted scalars are strings. A bool, integer or number must be written plain: `"true"` or
// `"0.5"` where one is required is rejected ("expected true or false, got the string "true"").
// Durations, sizes and strings are text by nature, so quoting them is fine (`timeout: "30s"`).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/yaml/yaml_reader.h"

namespace codl::yaml {

// True for a quoted scalar ('x' or "x"): YAML gives it the non-specific tag "!".
bool IsQuoted(const YAML::Node& n);
// Throws "expected <what>, got the string "<text>"" when `n` is quoted.
void RejectQuoted(const YAML::Node& n, const std::string& path, const char* what);

std::string String(const YAML::Node& n, const std::string& path);          // any scalar
std::string NonEmptyString(const YAML::Node& n, const std::string& path);  // "must not be empty"
bool Bool(const YAML::Node& n, const std::string& path);  // true/false (YAML 1.1: yes/no/on/off)
// Base-10 integer in [lo, hi]: "expected an integer, got '2.5'", "1001 is out of range [1, 1000]".
int64_t Integer(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi);
uint64_t Unsigned64(const YAML::Node& n, const std::string& path);
double Number(const YAML::Node& n, const std::string& path);  // finite decimal number
// A duration through common/units ("30s", "500ms", a bare number is seconds); positive: > 0.
double Duration(const YAML::Node& n, const std::string& path, bool positive);
// A size through common/units ("4KiB", "1GB", a bare number is bytes).
uint64_t Size(const YAML::Node& n, const std::string& path);

// `n` must be a list; returns it. `what` names it in the error ("a list of hostnames").
const YAML::Node& List(const YAML::Node& n, const std::string& path, const char* what = "a list");
// A list of scalars, each read with String(); elements are named "path[i]".
std::vector<std::string> StringList(const YAML::Node& n, const std::string& path,
                                    const char* what = "a list of strings");

// Returns "" when a key is acceptable, else the reason (reported at the key).
using KeyCheck = std::function<std::string(const std::string& key)>;
// A mapping of non-empty scalar keys to scalar values ("path.key" names each value). Duplicate
// keys are rejected; `check_key`, when set, vets each key.
std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& path,
                                             const char* what = "a mapping",
                                             const KeyCheck& check_key = nullptr);

}  // namespace codl::yaml
