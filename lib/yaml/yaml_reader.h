// Strict YAML reading shared by every CoDL file format (experiment files, daemon config files):
// the first problem is thrown as a YamlError carrying the mark of the offending key or value;
// ReadDocument turns it into "FILE:LINE:COL: path: message" (1-based). Typed values (bool,
// integer, number, duration, size, lists, maps) are read with typed.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "lib/common/result.h"

namespace codl::yaml {

// The first problem found; validation stops there.
struct YamlError {
  YAML::Mark mark;
  std::string message;
};

[[noreturn]] void Fail(const YAML::Mark& mark, const std::string& path, const std::string& msg);
[[noreturn]] void Fail(const YAML::Node& at, const std::string& path, const std::string& msg);

std::string Join(const std::string& path, const std::string& key);  // "a.b"
std::string Index(const std::string& path, size_t i);               // "a[3]"
const char* KindName(const YAML::Node& n);                          // "a list", "null", ...

// One mapping whose keys are checked against the allowed set (unknown and duplicate keys are
// rejected at the key, with the list of known keys), then read by name.
class MapReader {
 public:
  MapReader(const YAML::Node& map, std::string path, std::initializer_list<const char*> allowed);
  bool Has(const std::string& key) const { return entries_.count(key) > 0; }
  const YAML::Node& Value(const std::string& key) const { return entries_.at(key).second; }
  const YAML::Node& Key(const std::string& key) const { return entries_.at(key).first; }
  const YAML::Node& Require(const std::string& key) const;  // missing: error at the mapping
  std::string PathOf(const std::string& key) const { return Join(path_, key); }
  const YAML::Node& node() const { return map_; }

 private:
  YAML::Node map_;
  std::string path_;
  std::map<std::string, std::pair<YAML::Node, YAML::Node>> entries_;
};

// The scalar text of `n`, or an error "expected <what>, got <kind>".
std::string ScalarOf(const YAML::Node& n, const std::string& path, const char* what);

// "FILE:LINE:COL" (1-based); a node built in code has no mark and reads as FILE:1:1.
std::string Location(const std::string& file, const YAML::Mark& mark);

// Limits on any CoDL YAML file (experiment files also arrive over RPC, and come back from
// results files): its size, how deep flow collections (`[`, `{`) may nest, how many aliases
// (`*name`) it may use, and how big it may be once every alias is replaced by a copy of what it
// refers to (each node counts one byte plus its scalar's bytes). All are checked by an event
// pass before any node is built (docs/security.md, "YAML limits").
inline constexpr size_t kMaxDocumentBytes = 1 << 20;
inline constexpr int kMaxFlowNesting = 64;
inline constexpr uint64_t kMaxAliases = 1000;
inline constexpr uint64_t kMaxExpandedBytes = 4 << 20;

// Parses `text` as exactly one YAML document and runs `read` on its root (a null node for an
// empty or comment-only text). The first YamlError thrown by `read`, a YAML syntax error
// ("YAML syntax error: ...") or a second document becomes
// InvalidArgument("FILE:LINE:COL: message"). Text over the limits above is refused first (the
// alias limits at the alias or node that crosses them).
Status ReadDocument(std::string_view text, const std::string& file,
                    const std::function<void(const YAML::Node& root)>& read);

}  // namespace codl::yaml
