// libFuzzer target: the agent's reader of codl-inject's stdout (injectors/core/protocol.h) on
// arbitrary lines. Whatever parses must format back to a line that parses to the same record
// (Format(Parse(Format(Parse(x)))) == Format(Parse(x))); the hex codec must round-trip too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "injectors/core/protocol.h"

namespace protocol = codl::injectors::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string kind;
  auto record = protocol::ParseRecord(input, &kind);
  if (record.ok()) {
    const std::string line = protocol::FormatRecord(*record);
    auto again = protocol::ParseRecord(line);
    if (!again.ok() || protocol::FormatRecord(*again) != line) std::abort();
  }
  if (auto bytes = protocol::HexDecode(input); bytes.ok()) {
    if (protocol::HexDecode(protocol::HexEncode(*bytes)).value() != *bytes) std::abort();
  }
  (void)protocol::RendezvousFetch::Parse(input);
  return 0;
}
