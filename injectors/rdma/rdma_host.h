// What this host offers for an RDMA flood, read without libibverbs' header so the injector
// catalog (which the controller links) and `net --help` can say it too:
//   * ports from sysfs (/sys/class/infiniband/<device>/ports/<n>/{state,link_layer}),
//   * which GID a port should use (gid_attrs/types: RoCE v2 when present),
//   * whether libibverbs loads and sees the devices (dlopen, opaque pointers),
// and the one-line reason the rdma injector is unavailable, or the ports it can use.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::rdma {

constexpr const char* kSysfsRoot = "/sys/class/infiniband";

struct Port {
  std::string device;      // e.g. mlx5_0, rxe0
  int port = 1;            // 1-based, as verbs numbers them
  std::string state;       // ACTIVE, DOWN, INIT, ARMED... (sysfs "4: ACTIVE" -> "ACTIVE")
  std::string link_layer;  // InfiniBand or Ethernet (RoCE, iWARP)
  bool iwarp = false;      // node_type RNIC (siw, iw_cxgb4...): QPs connect only via rdma_cm
  bool active() const { return state == "ACTIVE"; }
  bool usable() const { return active() && !iwarp; }
  bool ethernet() const { return link_layer == "Ethernet"; }
  std::string Name() const;  // "mlx5_0 port 1"
};

// Every port under `root`, devices and ports in name order. Err (without an "RDMA: " prefix):
// "no device (/sys/class/infiniband absent: no RDMA driver loaded)" or
// "no device (/sys/class/infiniband is empty)".
Result<std::vector<Port>> ReadPorts(const std::string& root);

struct Gid {
  int index = 0;
  std::string type;  // "RoCE v2", "IB/RoCE v1", "" when sysfs does not say
  std::array<uint8_t, 16> gid{};
};

// The port's GID table (non-zero entries only) from <root>/<device>/ports/<n>/gids/<i> and
// gid_attrs/types/<i>.
std::vector<Gid> ReadGids(const std::string& root, const Port& port);

// The GID index to address the peer with, -1 = none (route by LID, no GRH). `requested` is the
// gid_index option: >= 0 must name a GID of the table; -1 picks one: on Ethernet (RoCE) a
// RoCE v2 GID, an IPv4-mapped one first (routable, what NCCL and perftest pick), else the first
// GID; on InfiniBand none (the subnet routes by LID).
Result<int> ChooseGid(const std::vector<Gid>& table, const Port& port, int requested);

// The port the flood uses: `device` "" = any, `port` 0 = any, the first usable (ACTIVE, not
// iWARP) one that matches. Errors name what there is.
Result<Port> ChoosePort(const std::vector<Port>& ports, const std::string& device, int port);

// "mlx5_0 port 1 (InfiniBand, ACTIVE), rxe0 port 1 (Ethernet, DOWN), siw0 port 1 (Ethernet,
// iWARP, ACTIVE)".
std::string DescribePorts(const std::vector<Port>& ports);

// Whether the flood can run here. reason "" = yes; otherwise one of, in the order checked:
//   "no device (/sys/class/infiniband absent: no RDMA driver loaded)"
//   "libibverbs.so.1 does not load (<dlerror>; Debian: libibverbs1)"
//   "libibverbs finds no device (no provider for mlx5_0: Debian: ibverbs-providers)"
//   "no active port (mlx5_0 port 1 (InfiniBand, DOWN))"
//   "no usable port (siw0 port 1 (Ethernet, iWARP, ACTIVE): iWARP queue pairs connect only
//    through rdma_cm, which this flood does not use)"
struct Availability {
  std::string reason;
  std::vector<Port> ports;  // every port sysfs lists whose device libibverbs sees
};

// The devices libibverbs lists, or why it cannot be asked.
using VerbsDeviceLister = std::function<Result<std::vector<std::string>>()>;

// The probe, with its two sources passed in (tests give a fake sysfs tree and lister).
// libibverbs is asked only when sysfs lists a device.
Availability Probe(const std::string& root, const VerbsDeviceLister& list_devices);

// ibv_get_device_list through dlopen("libibverbs.so.1"), never dlclose'd (its provider plug-ins
// must stay mapped); no header needed.
Result<std::vector<std::string>> ListVerbsDevices();

// This host's, probed once (devices do not come and go under a running process).
const Availability& HostAvailability();

}  // namespace codl::injectors::rdma
