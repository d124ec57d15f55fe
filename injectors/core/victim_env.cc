#include "injectors/core/victim_env.h"

namespace codl::injectors {

bool IsExportableEnvName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name[0] < 'A' || name[0] > 'Z') return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  if (name.substr(0, 3) == "LD_") return false;
  for (std::string_view banned : {"PATH", "IFS", "ENV", "BASH_ENV", "SHELL", "HOME"}) {
    if (name == banned) return false;
  }
  return true;
}

}  // namespace codl::injectors
