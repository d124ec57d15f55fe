#include "gpusim/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace codl::gpusim {
namespace {

const std::set<std::string> kDeviceKeys = {"name",          "sms",          "compute_capability",
                                           "memory_gib",    "hbm_gbps",     "pcie_h2d_gbps",
                                           "pcie_d2h_gbps", "nvlink_gbps",  "nvlink_links",
                                           "fp32_gflops",   "sm_clock_mhz", "mem_clock_mhz"};

std::string Where(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return "";
  return " (line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1) + ")";
}

double Positive(const YAML::Node& n, const std::string& key, double lo, double hi) {
  const double v = n.as<double>();
  if (!(v >= lo && v <= hi)) {
    throw std::runtime_error("'" + key + "': " + n.Scalar() + " is out of range [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]" + Where(n));
  }
  return v;
}

void ApplyDevice(const YAML::Node& map, DeviceSpec* d) {
  if (!map.IsMap()) throw std::runtime_error("a device is a map of keys" + Where(map));
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (!kDeviceKeys.count(key))
      throw std::runtime_error("unknown device key '" + key + "'" + Where(kv.first));
    if (key == "name") {
      d->name = v.as<std::string>();
      if (d->name.empty() || d->name.size() > 95)
        throw std::runtime_error("'name': 1 to 95 characters" + Where(v));
    } else if (key == "sms") {
      d->sms = static_cast<int>(Positive(v, key, 1, 1024));
    } else if (key == "compute_capability") {
      const std::string cc = v.as<std::string>();
      int major = 0, minor = 0;
      if (std::sscanf(cc.c_str(), "%d.%d", &major, &minor) != 2 || major < 1 || major > 20 ||
          minor < 0 || minor > 9)
        throw std::runtime_error("'compute_capability': '" + cc + "' is not like 9.0" + Where(v));
      d->cc_major = major;
      d->cc_minor = minor;
    } else if (key == "memory_gib") {
      d->memory_bytes = static_cast<uint64_t>(Positive(v, key, 1.0 / 1024, 4096) * (1ull << 30));
    } else if (key == "hbm_gbps") {
      d->hbm_bps = Positive(v, key, 0.001, 100000) * 1e9;
    } else if (key == "pcie_h2d_gbps") {
      d->pcie_h2d_bps = Positive(v, key, 0.001, 100000) * 1e9;
    } else if (key == "pcie_d2h_gbps") {
      d->pcie_d2h_bps = Positive(v, key, 0.001, 100000) * 1e9;
    } else if (key == "nvlink_gbps") {
      d->nvlink_bps = Positive(v, key, 0.001, 100000) * 1e9;
    } else if (key == "nvlink_links") {
      d->nvlink_links = static_cast<int>(Positive(v, key, 0, 64));
    } else if (key == "fp32_gflops") {
      d->fp32_flops = Positive(v, key, 0.001, 1e7) * 1e9;
    } else if (key == "sm_clock_mhz") {
      d->sm_clock_mhz = static_cast<unsigned>(Positive(v, key, 1, 10000));
    } else if (key == "mem_clock_mhz") {
      d->mem_clock_mhz = static_cast<unsigned>(Positive(v, key, 1, 100000));
    }
  }
}

}  // namespace

NodeConfig DefaultConfig() {
  NodeConfig c;
  c.devices.assign(2, DeviceSpec{});
  return c;
}

bool ParseConfig(const std::string& text, const std::string& source, NodeConfig* out,
                 std::string* error) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap())
      throw std::runtime_error("the config is a map (count, device, devices, faults)");
    NodeConfig c;
    c.source = source;
    DeviceSpec common;
    int count = 2;
    bool have_count = false;
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "count") {
        count = static_cast<int>(Positive(kv.second, key, 0, 16));
        have_count = true;
      } else if (key == "device") {
        ApplyDevice(kv.second, &common);
      } else if (key != "devices" && key != "faults") {
        throw std::runtime_error("unknown key '" + key + "' (count, device, devices, faults)" +
                                 Where(kv.first));
      }
    }
    if (const YAML::Node list = root["devices"]) {
      if (!list.IsSequence()) throw std::runtime_error("'devices' is a list of maps" + Where(list));
      if (have_count && static_cast<int>(list.size()) != count)
        throw std::runtime_error("'count' is " + std::to_string(count) + " but 'devices' lists " +
                                 std::to_string(list.size()));
      if (list.size() > 16) throw std::runtime_error("'devices': at most 16" + Where(list));
      for (const auto& d : list) {
        DeviceSpec spec = common;
        ApplyDevice(d, &spec);
        c.devices.push_back(spec);
      }
    } else {
      c.devices.assign(static_cast<size_t>(count), common);
    }
    if (const YAML::Node faults = root["faults"]) {
      if (!faults.IsSequence())
        throw std::runtime_error("'faults' is a list of maps" + Where(faults));
      for (const auto& f : faults) {
        FaultSpec spec;
        for (const auto& kv : f) {
          const std::string key = kv.first.as<std::string>();
          if (key == "device") {
            spec.device = static_cast<int>(Positive(kv.second, key, 0, 15));
          } else if (key == "after_ops") {
            spec.after_ops = static_cast<uint64_t>(Positive(kv.second, key, 0, 1e15));
          } else if (key == "error") {
            spec.error = kv.second.as<std::string>();
            if (spec.error != "sticky" && spec.error != "lost")
              throw std::runtime_error("'error': '" + spec.error + "' is not sticky or lost" +
                                       Where(kv.second));
          } else {
            throw std::runtime_error("unknown fault key '" + key + "' (device, after_ops, error)" +
                                     Where(kv.first));
          }
        }
        if (spec.error.empty()) throw std::runtime_error("a fault needs 'error'" + Where(f));
        if (spec.device >= static_cast<int>(c.devices.size()))
          throw std::runtime_error("fault on device " + std::to_string(spec.device) +
                                   " but there are " + std::to_string(c.devices.size()) + Where(f));
        c.faults.push_back(spec);
      }
    }
    *out = std::move(c);
    return true;
  } catch (const std::exception& e) {
    *error = source + ": " + e.what();
    return false;
  }
}

const NodeConfig& Config() {
  static const NodeConfig config = [] {
    const char* path = std::getenv("CODL_GPUSIM_CONFIG");
    if (path == nullptr || *path == '\0') return DefaultConfig();
    std::ifstream in(path);
    NodeConfig c;
    if (!in) {
      c.error = std::string("CODL_GPUSIM_CONFIG=") + path + " cannot be read";
      std::fprintf(stderr, "gpusim: %s\n", c.error.c_str());
      return c;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string error;
    if (!ParseConfig(text.str(), path, &c, &error)) {
      c = NodeConfig{};
      c.error = error;
      std::fprintf(stderr, "gpusim: %s\n", error.c_str());
    }
    return c;
  }();
  return config;
}

}  // namespace codl::gpusim
