#include "injectors/rdma/rdma_wire.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <sstream>

namespace codl::injectors::rdma {
namespace {

constexpr std::string_view kMagic = "codl-rdma1";
constexpr uint64_t k24Bits = 0xffffff;

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The whole of `s` as a number in `base` no larger than `max`.
bool ParseNumber(std::string_view s, int base, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *out <= max;
}

bool ParseGid(std::string_view s, std::array<uint8_t, 16>* gid) {
  if (s.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    uint64_t byte;
    if (!ParseNumber(s.substr(2 * i, 2), 16, 0xff, &byte)) return false;
    (*gid)[i] = static_cast<uint8_t>(byte);
  }
  return true;
}

bool ParseQps(std::string_view s, std::vector<QpInfo>* qps) {
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view one = s.substr(0, comma);
    const size_t colon = one.find(':');
    uint64_t qpn, psn;
    if (colon == std::string_view::npos || !ParseNumber(one.substr(0, colon), 10, k24Bits, &qpn) ||
        !ParseNumber(one.substr(colon + 1), 10, k24Bits, &psn)) {
      return false;
    }
    qps->push_back({static_cast<uint32_t>(qpn), static_cast<uint32_t>(psn)});
    s = comma == std::string_view::npos ? "" : s.substr(comma + 1);
  }
  return !qps->empty();
}

// One key=value field into `c`: ok, or what is wrong with it.
Status ParseField(const std::string& key, const std::string& value, ConnInfo* c) {
  uint64_t n = 0;
  const std::string bad = "'" + key + "': '" + value + "' is not ";
  if (key == "lid") {
    if (!ParseNumber(value, 10, 0xffff, &n)) return InvalidArgument(bad + "a 16-bit LID");
    c->lid = static_cast<uint16_t>(n);
  } else if (key == "gid") {
    if (!ParseGid(value, &c->gid)) return InvalidArgument(bad + "32 hex characters");
  } else if (key == "mtu") {
    if (!ParseNumber(value, 10, 4096, &n) || MtuEnum(static_cast<int>(n)) < 0) {
      return InvalidArgument("'mtu': " + value + " is not 256, 512, 1024, 2048 or 4096");
    }
    c->mtu = static_cast<int>(n);
  } else if (key == "rkey") {
    if (!ParseNumber(value, 16, 0xffffffff, &n)) return InvalidArgument(bad + "a 32-bit hex key");
    c->rkey = static_cast<uint32_t>(n);
  } else if (key == "addr") {
    if (!ParseNumber(value, 16, ~0ull, &n)) return InvalidArgument(bad + "a 64-bit hex address");
    c->addr = n;
  } else if (key == "len") {
    if (!ParseNumber(value, 10, ~0ull, &n)) return InvalidArgument(bad + "a length");
    c->length = n;
  } else if (key == "qps") {
    if (!ParseQps(value, &c->qps))
      return InvalidArgument(bad + "<qpn>:<psn>,... with 24-bit numbers");
  } else {
    return InvalidArgument("unknown field '" + key + "'");
  }
  return Status::Ok();
}

}  // namespace

bool ConnInfo::has_gid() const {
  for (uint8_t b : gid) {
    if (b != 0) return true;
  }
  return false;
}

int MtuBytes(int ibv_mtu) { return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128 << ibv_mtu : 0; }

int MtuEnum(int bytes) {
  for (int e = 1; e <= 5; ++e) {
    if (MtuBytes(e) == bytes) return e;
  }
  return -1;
}

std::string EncodeConnInfo(const ConnInfo& c) {
  std::string gid;
  for (uint8_t b : c.gid) {
    char h[3];
    std::snprintf(h, sizeof h, "%02x", b);
    gid += h;
  }
  std::string qps;
  for (const auto& q : c.qps) {
    qps += (qps.empty() ? "" : ",") + std::to_string(q.qpn) + ":" + std::to_string(q.psn);
  }
  return "lid=" + std::to_string(c.lid) + " gid=" + gid + " mtu=" + std::to_string(c.mtu) +
         " rkey=" + Hex(c.rkey) + " addr=" + Hex(c.addr) + " len=" + std::to_string(c.length) +
         " qps=" + qps;
}

Result<ConnInfo> DecodeConnInfo(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::map<std::string, std::string> fields;
  for (std::string f; in >> f;) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos) return Err("rdma connection info: '" + f + "' is not key=value");
    fields[f.substr(0, eq)] = f.substr(eq + 1);
  }
  ConnInfo c;
  for (const char* required : {"lid", "gid", "mtu", "rkey", "addr", "len", "qps"}) {
    if (!fields.count(required)) {
      return Err("rdma connection info: missing '" + std::string(required) + "'");
    }
  }
  for (const auto& [key, value] : fields) {
    if (Status why = ParseField(key, value, &c); !why.ok()) {
      return std::move(why).WithContext("rdma connection info");
    }
  }
  return c;
}

std::string EncodeEndpoint(const Endpoint& e) {
  std::string addresses;
  for (const auto& a : e.addresses) addresses += (addresses.empty() ? "" : ",") + a;
  return std::string(kMagic) + " " + e.token + " " + addresses + " " + EncodeConnInfo(e.info);
}

Result<Endpoint> DecodeEndpoint(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string magic, addresses;
  Endpoint e;
  in >> magic >> e.token >> addresses;
  if (magic != kMagic || addresses.empty() || addresses.find('=') != std::string::npos) {
    return Err(
        "not an rdma endpoint (expected 'codl-rdma1 <token> <host:port>,... <connection "
        "info>')");
  }
  if (e.token.size() != 32 || e.token.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Err("rdma endpoint token must be 32 hex characters");
  }
  for (size_t start = 0; start <= addresses.size();) {
    const size_t comma = std::min(addresses.find(',', start), addresses.size());
    if (comma > start) e.addresses.push_back(addresses.substr(start, comma - start));
    start = comma + 1;
  }
  std::string rest;
  std::getline(in, rest);
  auto info = DecodeConnInfo(rest);
  if (!info.ok()) return info.status();
  e.info = std::move(*info);
  return e;
}

}  // namespace codl::injectors::rdma
