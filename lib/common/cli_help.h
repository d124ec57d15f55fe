// --help without CLI11's internals, for every program built on CLI11 (codlctl, codl-agent,
// codl-controller). Header-only: it adds no dependency to codl_common's library.
//
// CLI11 prints an option's type name as its validators composed it and lists the options it
// excludes or needs: `--lease FLOAT:DURATION:FLOAT in [1 - 1e+07]=10s`, `--trials Excludes:
// --phases`. Here an option shows the kind of value it takes and its default, `--lease
// DURATION=10s`, `-o,--output {table,json,csv}=table`; what goes with what is said in the
// description, and a value out of range is still refused naming the option and the range.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace codl {

class PlainHelpFormatter : public CLI::Formatter {
 public:
  // "FLOAT:DURATION:FLOAT in [1 - 1e+07]" -> "DURATION"; "TEXT:{table,json}" -> "{table,json}";
  // "INT:INT in [1 - 64]" -> "INT": the most specific word, not a base type nor a range.
  static std::string ValueKind(const std::string& type_name) {
    std::vector<std::string> parts;
    std::string part;
    int braces = 0;
    for (char c : type_name) {
      braces += c == '{' ? 1 : c == '}' ? -1 : 0;
      if (c == ':' && braces == 0) {
        parts.push_back(part);
        part.clear();
      } else {
        part += c;
      }
    }
    parts.push_back(part);
    auto base = [](std::string p) {
      if (const size_t in = p.find(" in ["); in != std::string::npos) p.resize(in);
      return p;
    };
    std::string kind;
    for (const std::string& p : parts) {
      const std::string b = base(p);
      if (b.empty() || b == "FLOAT" || b == "INT" || b == "UINT" || b == "TEXT" || b == "BOOLEAN" ||
          b == "NUMBER") {
        continue;
      }
      kind = b;
    }
    return kind.empty() ? base(parts.front()) : kind;
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    std::string out;
    if (opt->get_type_size() != 0) {
      const std::string kind = ValueKind(opt->get_type_name());
      if (!kind.empty()) out += " " + kind;
      if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
      if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) {
        out += " ...";
      } else if (opt->get_expected_min() > 1) {
        out += " x " + std::to_string(opt->get_expected());
      }
      if (opt->get_required()) out += " REQUIRED";
    }
    if (!opt->get_envname().empty()) out += " (env " + opt->get_envname() + ")";
    return out;
  }
};

// Sets the formatter on `app`; call before adding subcommands, which inherit it.
inline void UsePlainHelp(CLI::App& app) { app.formatter(std::make_shared<PlainHelpFormatter>()); }

}  // namespace codl
