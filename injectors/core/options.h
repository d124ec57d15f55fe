// The injectors' option tables are the shared std-only tables of lib/common/options.h; these
// names keep every injector (and registry.cc) spelling them codl::injectors::... unchanged.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/common/options.h"

namespace codl::injectors {

using codl::BoolOption;
using codl::DoubleOption;
using codl::DurationOption;
using codl::EnumOption;
using codl::FormatBound;
using codl::FormatRange;
using codl::IntOption;
using codl::OptionSpec;
using codl::OptionType;
using codl::OptionTypeName;
using codl::OptionValues;
using codl::ParseOptionValue;
using codl::RateOption;
using codl::SizeOption;
using codl::StringOption;

// An injector's --set KEY=VALUE set against its table; `injector` names it in messages
// ("unknown option 'foo' for injector 'io_uring' (known: ...)").
inline Result<OptionValues> ParseOptions(const std::string& injector,
                                         const std::vector<OptionSpec>& table,
                                         const std::map<std::string, std::string>& given) {
  return ParseOptionTable("injector '" + injector + "'", table, given);
}

}  // namespace codl::injectors
