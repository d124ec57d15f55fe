#include "injectors/rdma/rdma_host.h"

#include <arpa/inet.h>
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace codl::injectors::rdma {
namespace {

namespace fs = std::filesystem;

// The first line of a sysfs file, "" when unreadable (unused GID type entries fail with EINVAL).
std::string FirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// Directory entries' names, sorted (numbers by value: port 10 after port 9, GID 10 after 9).
std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  auto number = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    if (number(a) && number(b) && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return names;
}

bool IsV4Mapped(const std::array<uint8_t, 16>& g) {
  for (int i = 0; i < 10; ++i) {
    if (g[i] != 0) return false;
  }
  return g[10] == 0xff && g[11] == 0xff;
}

}  // namespace

std::string Port::Name() const { return device + " port " + std::to_string(port); }

Result<std::vector<Port>> ReadPorts(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Err("no device (" + root + " absent: no RDMA driver loaded)");
  }
  std::vector<Port> ports;
  for (const auto& device : Names(root)) {
    // "1: CA" (InfiniBand, RoCE), "4: RNIC" (iWARP).
    const bool iwarp =
        FirstLine(fs::path(root) / device / "node_type").find("RNIC") != std::string::npos;
    for (const auto& n : Names(fs::path(root) / device / "ports")) {
      const fs::path dir = fs::path(root) / device / "ports" / n;
      Port p;
      p.device = device;
      p.port = std::atoi(n.c_str());
      const std::string state = FirstLine(dir / "state");  // "4: ACTIVE"
      const size_t colon = state.find(": ");
      p.state = colon == std::string::npos ? state : state.substr(colon + 2);
      p.link_layer = FirstLine(dir / "link_layer");
      p.iwarp = iwarp;
      ports.push_back(p);
    }
  }
  if (ports.empty()) return Err("no device (" + root + " is empty)");
  return ports;
}

std::vector<Gid> ReadGids(const std::string& root, const Port& port) {
  const fs::path dir = fs::path(root) / port.device / "ports" / std::to_string(port.port);
  std::vector<Gid> table;
  for (const auto& i : Names(dir / "gids")) {
    Gid g;
    g.index = std::atoi(i.c_str());
    if (inet_pton(AF_INET6, FirstLine(dir / "gids" / i).c_str(), g.gid.data()) != 1) continue;
    if (g.gid == std::array<uint8_t, 16>{}) continue;  // an unused entry
    g.type = FirstLine(dir / "gid_attrs" / "types" / i);
    table.push_back(g);
  }
  return table;
}

Result<int> ChooseGid(const std::vector<Gid>& table, const Port& port, int requested) {
  if (requested >= 0) {
    std::string have;
    for (const auto& g : table) {
      if (g.index == requested) return requested;
      have += (have.empty() ? "" : ", ") + std::to_string(g.index);
    }
    return Err("option 'gid_index': " + port.Name() + " has no GID at index " +
               std::to_string(requested) +
               (have.empty() ? " (it has none)" : " (it has " + have + ")"));
  }
  if (!port.ethernet()) return -1;
  for (bool v4_only : {true, false}) {
    for (const auto& g : table) {
      if (g.type == "RoCE v2" && (!v4_only || IsV4Mapped(g.gid))) return g.index;
    }
  }
  if (!table.empty()) return table.front().index;
  return Err("rdma: " + port.Name() +
             " (Ethernet) has no GID: give its network interface an IP address, or set gid_index");
}

Result<Port> ChoosePort(const std::vector<Port>& ports, const std::string& device, int port) {
  std::vector<Port> match;
  std::string devices;
  for (const auto& p : ports) {
    if (devices.find(p.device) == std::string::npos)
      devices += (devices.empty() ? "" : ", ") + p.device;
    if (device.empty() || p.device == device) match.push_back(p);
  }
  if (match.empty()) {
    return Err("option 'device': no RDMA device '" + device + "' here (devices: " + devices + ")");
  }
  if (port > 0) {
    std::string numbers;
    std::vector<Port> on_port;
    for (const auto& p : match) {
      numbers += (numbers.empty() ? "" : ", ") + std::to_string(p.port);
      if (p.port == port) on_port.push_back(p);
    }
    if (on_port.empty()) {
      return Err("option 'port': " + (device.empty() ? "no device" : device) + " has no port " +
                 std::to_string(port) + " (ports: " + numbers + ")");
    }
    match = on_port;
  }
  for (const auto& p : match) {
    if (p.usable()) return p;
  }
  for (const auto& p : match) {
    if (p.active()) {
      return Err("rdma: " + p.Name() +
                 " is iWARP: its queue pairs connect only through rdma_cm, which this flood "
                 "does not use (choose an InfiniBand or RoCE port)");
    }
  }
  return Err("rdma: no active port among " + DescribePorts(match));
}

std::string DescribePorts(const std::vector<Port>& ports) {
  std::string out;
  for (const auto& p : ports) {
    out += (out.empty() ? "" : ", ") + p.Name() + " (" + p.link_layer +
           (p.iwarp ? ", iWARP, " : ", ") + p.state + ")";
  }
  return out;
}

Availability Probe(const std::string& root, const VerbsDeviceLister& list_devices) {
  Availability a;
  auto ports = ReadPorts(root);
  if (!ports.ok()) {
    a.reason = ports.error();
    return a;
  }
  auto names = list_devices();
  if (!names.ok()) {
    a.reason = names.error();
    return a;
  }
  std::string unseen;
  for (const auto& p : *ports) {
    if (std::find(names->begin(), names->end(), p.device) != names->end()) {
      a.ports.push_back(p);
    } else if (unseen.find(p.device) == std::string::npos) {
      unseen += (unseen.empty() ? "" : ", ") + p.device;
    }
  }
  if (a.ports.empty()) {
    a.reason =
        "libibverbs finds no device (no provider for " + unseen + ": Debian: ibverbs-providers)";
    return a;
  }
  if (std::none_of(a.ports.begin(), a.ports.end(), [](const Port& p) { return p.active(); })) {
    a.reason = "no active port (" + DescribePorts(a.ports) + ")";
  } else if (std::none_of(a.ports.begin(), a.ports.end(),
                          [](const Port& p) { return p.usable(); })) {
    a.reason = "no usable port (" + DescribePorts(a.ports) +
               ": iWARP queue pairs connect only through rdma_cm, which this flood does not use)";
  }
  return a;
}

Result<std::vector<std::string>> ListVerbsDevices() {
  // Never dlclose'd: libibverbs loads provider plug-ins that must not be unmapped under it.
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Err("libibverbs.so.1 does not load (" + std::string(dlerror()) +
               "; Debian: libibverbs1)");
  }
  // Declared opaquely: struct ibv_device is only ever passed back.
  using GetDeviceList = void** (*)(int*);
  using FreeDeviceList = void (*)(void**);
  using GetDeviceName = const char* (*)(void*);
  auto list = reinterpret_cast<GetDeviceList>(dlsym(lib, "ibv_get_device_list"));
  auto free_list = reinterpret_cast<FreeDeviceList>(dlsym(lib, "ibv_free_device_list"));
  auto name = reinterpret_cast<GetDeviceName>(dlsym(lib, "ibv_get_device_name"));
  if (list == nullptr || free_list == nullptr || name == nullptr) {
    return Err("libibverbs.so.1 lacks ibv_get_device_list");
  }
  int n = 0;
  void** devices = list(&n);
  std::vector<std::string> names;
  for (int i = 0; devices != nullptr && i < n; ++i) names.emplace_back(name(devices[i]));
  if (devices != nullptr) free_list(devices);
  return names;
}

const Availability& HostAvailability() {
  static const Availability a = Probe(kSysfsRoot, ListVerbsDevices);
  return a;
}

}  // namespace codl::injectors::rdma
