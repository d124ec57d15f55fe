// A small JSON reader for protocol.h's records: one value per call, the whole input consumed,
// numbers kept as written (so 64-bit integers come back exact), nesting limited. std-only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::json {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kObject, kArray };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;               // a string's contents, or a number as written
  std::vector<std::string> keys;  // an object's, in order
  std::vector<Value> items;       // an object's values (parallel to keys) or an array's
  const Value* Find(std::string_view key) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return &items[i];
    }
    return nullptr;
  }
};

// The whole of `text` as one JSON value; InvalidArgument("<why> at offset N") otherwise.
Result<Value> Parse(std::string_view text);

}  // namespace codl::injectors::json
