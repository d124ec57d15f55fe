#include "injectors/victim_env.h"

#include "lib/common/json_line.h"

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

std::string VictimEnvLine(const std::map<std::string, std::string>& env) {
  return JsonLine().AddObject("victim_env", env).str();
}

}  // namespace codl::injectors
