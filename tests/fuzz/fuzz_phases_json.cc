// libFuzzer target: the results store's phases JSON reader (lib/store/phases_json), which reads
// victim_steps.phases back from SQLite; a decoded map must encode again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/store/phases_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto phases = codl::store::DecodePhases(text);
  if (phases.ok()) {
    auto again = codl::store::EncodePhases(*phases);
    if (!again.ok()) __builtin_trap();  // what was read must be writable
  }
  return 0;
}
