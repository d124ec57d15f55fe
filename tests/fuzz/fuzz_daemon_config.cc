// libFuzzer target: the daemon config readers (lib/daemon), agent and controller files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/daemon/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)codl::daemon::ParseAgentConfig(text, "<fuzz-agent>");
  (void)codl::daemon::ParseControllerConfig(text, "<fuzz-controller>");
  return 0;
}
