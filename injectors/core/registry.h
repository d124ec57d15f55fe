// The one list of injectors. Adding an injector = one source file that defines
// `std::unique_ptr<Injector> Make<Name>Injector()` + one line in core/registry.cc's
// CODL_INJECTORS list. The registry never depends on CUDA or liburing: an injector built without
// its library still registers, and its Unsupported() says why it cannot run here.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/injector.h"

namespace codl::injectors {

// Names in registry order.
std::vector<std::string> InjectorNames();

// A fresh instance, or nullptr for an unknown name.
std::unique_ptr<Injector> CreateInjector(const std::string& name);

// The descriptor of a registered injector, or nullptr.
const Descriptor* FindDescriptor(const std::string& name);

// Ok if `name` is a registered injector, else InvalidArgument("unknown injector 'x' (known: a,
// b, c)").
Status ValidateInjectorName(const std::string& name);

// Ok if KEY=VALUE is acceptable for the injector on its own (type, unit, bounds, choices), else
// the exact message codl-inject would print. Used by the experiment YAML validator.
Status ValidateOption(const std::string& injector, const std::string& key,
                      const std::string& value);

// Parses a full option set: per-option checks, then the injector's cross-option CheckOptions.
Result<OptionValues> ParseInjectorOptions(const Injector& injector,
                                          const std::map<std::string, std::string>& given);

// Ok or the first problem with a full option set (what ParseInjectorOptions would report).
Status ValidateOptions(const std::string& injector,
                       const std::map<std::string, std::string>& given);

// Checks an injector's own contract (name matches, option table well-formed, defaults valid):
// ok, or Internal(what is broken). The registry checks every entry on first use and aborts on
// a violation.
Status CheckDescriptorContract(const Descriptor& descriptor);

// Host facts for Unsupported()/Setup(): realpath'ed scratch roots and the CPU count.
HostInfo DetectHost(const std::vector<std::string>& scratch_roots);

}  // namespace codl::injectors
