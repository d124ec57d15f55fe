// The victim_env protocol: an injector with Capabilities::exports_victim_env prints, once set up,
//   {"victim_env":{"CUDA_MPS_PIPE_DIRECTORY":"/tmp/x/pipe", ...}}
// and the agent passes those variables to the victims it starts while the injector runs. An
// injector is a separate, less trusted program: names are limited to a safe pattern so a line
// cannot change how the victim's loader or shell behaves.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace codl::injectors {

// Upper-case letters, digits and '_', starting with a letter; never LD_* (the dynamic loader)
// nor PATH, IFS, ENV, BASH_ENV, SHELL, HOME (how the victim finds and runs programs).
bool IsExportableEnvName(std::string_view name);

// The line above, for `env` (every name must pass IsExportableEnvName).
std::string VictimEnvLine(const std::map<std::string, std::string>& env);

}  // namespace codl::injectors
