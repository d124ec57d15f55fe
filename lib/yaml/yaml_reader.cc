#include "lib/yaml/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "lib/common/suggest.h"

namespace codl::yaml {
namespace {

// How deep `[`/`{` nest outside quoted scalars and comments: yaml-cpp parses flow collections
// recursively, so a file of nothing but brackets could exhaust a daemon thread's stack.
int FlowNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool after_space =
        i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n';
    if (comment) {
      comment = c != '\n';
    } else if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && after_space) {
      comment = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

void Fail(const YAML::Mark& mark, const std::string& path, const std::string& msg) {
  throw YamlError{mark, path.empty() ? msg : path + ": " + msg};
}

void Fail(const YAML::Node& at, const std::string& path, const std::string& msg) {
  Fail(at.Mark(), path, msg);
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

const char* KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

MapReader::MapReader(const YAML::Node& map, std::string path,
                     std::initializer_list<const char*> allowed)
    : map_(map), path_(std::move(path)) {
  if (!map.IsMap()) Fail(map, path_, std::string("expected a mapping, got ") + KindName(map));
  for (const auto& kv : map) {
    const YAML::Node& key = kv.first;
    if (!key.IsScalar()) Fail(key, path_, "keys must be plain strings");
    const std::string& name = key.Scalar();
    bool known = false;
    for (const char* a : allowed) known = known || name == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      std::string hint = DidYouMean(name, std::vector<std::string>(allowed.begin(), allowed.end()));
      Fail(key, path_,
           std::string(path_.empty() ? "unknown top-level key '" : "unknown key '") + name + "'" +
               hint + " (expected one of: " + list + ")");
    }
    if (entries_.count(name)) Fail(key, path_, "duplicate key '" + name + "'");
    entries_.emplace(name, std::make_pair(key, kv.second));
  }
}

const YAML::Node& MapReader::Require(const std::string& key) const {
  if (!Has(key)) Fail(map_, path_, "missing required key '" + key + "'");
  return Value(key);
}

std::string ScalarOf(const YAML::Node& n, const std::string& path, const char* what) {
  if (!n.IsScalar()) Fail(n, path, std::string("expected ") + what + ", got " + KindName(n));
  return n.Scalar();
}

std::string Location(const std::string& file, const YAML::Mark& mark) {
  int line = mark.is_null() ? 1 : mark.line + 1;
  int col = mark.is_null() ? 1 : mark.column + 1;
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

namespace {
// The first pass over a stream, with yaml-cpp's event parser (nothing is built yet):
// - counts the documents, up to kMaxDocuments, and keeps the mark of the second one's first
//   node. YAML::LoadAll never returns on some inputs (a top-level ", " — found by fuzzing,
//   tests/fuzz): the parser reports an endless run of empty documents, which the cap cuts off.
// - bounds what the document expands to. yaml-cpp shares an anchored node between its aliases,
//   but every reader that copies one out (a string, a list, an emitted YAML) materializes it
//   again: 120,000 aliases of a 500 kB scalar are 60 GB. Each node costs one plus the bytes of
//   its scalar; an alias costs what its anchor cost (nested aliases included), so the sum is the
//   size of the document with every alias replaced by a copy. Over kMaxAliases or
//   kMaxExpandedBytes, the handler throws at the alias or node that crossed the limit.
class FirstPass : public YAML::EventHandler {
 public:
  static constexpr int kMaxDocuments = 16;
  int documents = 0;
  YAML::Mark second_mark = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& m) override {
    ++documents;
    if (documents == 2) second_mark = m;
    second_node_seen_ = false;
    anchors_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override { Leaf(m, anchor, 1); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    Node(m);
    if (++aliases_ > kMaxAliases) {
      throw YamlError{m, "more than " + std::to_string(kMaxAliases) +
                             " aliases (*name); a CoDL YAML file may have at most " +
                             std::to_string(kMaxAliases)};
    }
    auto it = anchors_.find(anchor);
    Add(m, it == anchors_.end() ? 1 : it->second);
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(m, anchor, 1 + value.size());
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(m, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(m, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  void Node(const YAML::Mark& m) {
    if (documents == 2 && !second_node_seen_) second_mark = m;
    second_node_seen_ = true;
  }
  void Add(const YAML::Mark& m, uint64_t bytes) {
    expanded_ += bytes;
    if (expanded_ > kMaxExpandedBytes) {
      throw YamlError{m, "the document expands to more than " +
                             std::to_string(kMaxExpandedBytes >> 20) +
                             " MiB with its aliases (*name) replaced by what they refer to; "
                             "that is the limit for a CoDL YAML file"};
    }
  }
  void Leaf(const YAML::Mark& m, YAML::anchor_t anchor, uint64_t bytes) {
    Node(m);
    Add(m, bytes);
    if (anchor != 0) anchors_[anchor] = bytes;
  }
  void Open(const YAML::Mark& m, YAML::anchor_t anchor) {
    Node(m);
    Add(m, 1);
    open_.push_back({anchor, expanded_ - 1});
  }
  void Close() {
    if (open_.empty()) return;
    if (open_.back().first != 0) anchors_[open_.back().first] = expanded_ - open_.back().second;
    open_.pop_back();
  }

  bool second_node_seen_ = false;
  uint64_t aliases_ = 0;
  uint64_t expanded_ = 0;
  std::map<YAML::anchor_t, uint64_t> anchors_;             // anchor -> expanded size
  std::vector<std::pair<YAML::anchor_t, uint64_t>> open_;  // containers: anchor, size at start
};
}  // namespace

Status ReadDocument(std::string_view text, const std::string& file,
                    const std::function<void(const YAML::Node& root)>& read) {
  // Files arrive over RPC too (codlctl submit): bounded before yaml-cpp sees them.
  if (text.size() > kMaxDocumentBytes) {
    return InvalidArgument(file + ": " + std::to_string(text.size()) +
                           " bytes; a CoDL YAML file may have at most " +
                           std::to_string(kMaxDocumentBytes) + " bytes");
  }
  if (int depth = FlowNestingDepth(text); depth > kMaxFlowNesting) {
    return InvalidArgument(file + ": brackets nested " + std::to_string(depth) + " deep; at most " +
                           std::to_string(kMaxFlowNesting) + " are allowed");
  }
  const std::string owned(text);
  FirstPass counter;
  YAML::Node root;
  try {
    std::istringstream in(owned);
    YAML::Parser parser(in);
    while (counter.documents < FirstPass::kMaxDocuments && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents == 1) root = YAML::Load(owned);
  } catch (const YamlError& e) {
    return InvalidArgument(Location(file, e.mark) + ": " + e.message);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(Location(file, e.mark) + ": YAML syntax error: " + e.msg);
  }
  try {
    if (counter.documents > 1) {
      Fail(counter.second_mark, "",
           "expected one YAML document, found " +
               (counter.documents >= FirstPass::kMaxDocuments
                    ? "at least " + std::to_string(counter.documents)
                    : std::to_string(counter.documents)));
    }
    read(root);
  } catch (const YamlError& e) {
    return InvalidArgument(Location(file, e.mark) + ": " + e.message);
  } catch (const YAML::Exception& e) {  // a reader touched a node without checking it first
    return InvalidArgument(Location(file, e.mark) + ": " + e.msg);
  }
  return Status::Ok();
}

}  // namespace codl::yaml
