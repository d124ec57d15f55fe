// What `codlctl profile` and `codlctl crosstalk` share that needs yaml-cpp (the rest is in
// commands.h): the options an experiment file gives each injector.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

namespace codl::cli {

// Injector name -> the `options` of FILE's first antagonist of that injector (cloned).
std::map<std::string, YAML::Node> InjectorOptionsIn(const YAML::Node& root);

}  // namespace codl::cli
