// Which victim variables an injector may export: one with Capabilities::exports_victim_env calls
// HostServices::ExportVictimEnv once set up (a protocol::VictimEnv record), and the agent passes
// those variables to the victims it starts while the injector runs. An injector is a separate,
// less trusted program: names are limited to a safe pattern so a record cannot change how the
// victim's loader or shell behaves. codl-inject and the agent both apply it.
#pragma once

#include <string_view>

namespace codl::injectors {

// Upper-case letters, digits and '_', starting with a letter; never LD_* (the dynamic loader)
// nor PATH, IFS, ENV, BASH_ENV, SHELL, HOME (how the victim finds and runs programs).
bool IsExportableEnvName(std::string_view name);

}  // namespace codl::injectors
