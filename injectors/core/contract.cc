// CheckDescriptorContract (registry.h): what the registry verifies of every injector's
// Descriptor on first use, so a broken table or flag fails every test at once, not a run.
#include <set>

#include "injectors/core/registry.h"

namespace codl::injectors {
namespace {

const OptionSpec* FindOption(const Descriptor& d, const std::string& name) {
  for (const auto& spec : d.options) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

Status CheckOptionTable(const Descriptor& d) {
  std::set<std::string> seen;
  for (const auto& spec : d.options) {
    if (spec.name.empty()) return Internal("an option has no name");
    if (!seen.insert(spec.name).second)
      return Internal("option '" + spec.name + "' is declared twice");
    if (spec.help.empty()) return Internal("option '" + spec.name + "' has no help");
    if (spec.min > spec.max) return Internal("option '" + spec.name + "' has min > max");
    if (spec.type == OptionType::kEnum && spec.choices.empty()) {
      return Internal("enum option '" + spec.name + "' has no choices");
    }
    auto parsed = ParseOptionValue(spec, spec.default_value);
    if (!parsed.ok()) return Internal("default of option '" + spec.name + "': " + parsed.error());
  }
  return Status::Ok();
}

// Ok when `name` is an option of type `type`, else what is wrong.
Status Requires(const Descriptor& d, const std::string& name, OptionType type,
                const std::string& why) {
  const OptionSpec* spec = FindOption(d, name);
  if (spec != nullptr && spec->type == type) return Status::Ok();
  return Internal(why + " needs " + OptionTypeName(type) + " option '" + name + "'");
}

// The controller and agent fill these options in by name for every collective injector.
Status CheckCapabilities(const Descriptor& d) {
  const Capabilities& c = d.capabilities;
  if (!c.collective) {
    if (c.rendezvous_option.empty()) return Status::Ok();
    return Internal("rendezvous_option is set but collective is not");
  }
  if (c.rendezvous_option.empty())
    return Internal("a collective injector must name its rendezvous_option");
  for (const auto& [name, type] : {std::pair<std::string, OptionType>{"ranks", OptionType::kInt},
                                   {"rank", OptionType::kInt},
                                   {"rendezvous_key", OptionType::kString},
                                   {c.rendezvous_option, OptionType::kString}}) {
    if (Status p = Requires(d, name, type, "collective"); !p.ok()) return p;
  }
  return Status::Ok();
}

Status CheckSmokeOptions(const Descriptor& d) {
  for (const auto& [key, value] : d.smoke_options) {
    const OptionSpec* spec = FindOption(d, key);
    if (spec == nullptr) return Internal("smoke option '" + key + "' is not an option");
    auto parsed = ParseOptionValue(*spec, value);
    if (!parsed.ok()) return Internal("smoke option '" + key + "': " + parsed.error());
  }
  return Status::Ok();
}

}  // namespace

Status CheckDescriptorContract(const Descriptor& d) {
  if (d.name.empty()) return Internal("empty name");
  if (d.resource.empty() || d.unit.empty()) return Internal("resource and unit must be set");
  for (auto check : {CheckOptionTable, CheckCapabilities, CheckSmokeOptions}) {
    if (Status problem = check(d); !problem.ok()) return problem;
  }
  return Status::Ok();
}

}  // namespace codl::injectors
