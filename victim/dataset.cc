#include "victim/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "victim/rng.h"

namespace codl::victim {
namespace {

std::string ErrnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Err(ErrnoText("write", path));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status WriteSample(const DatasetInfo& info, int64_t index, std::vector<uint8_t>& buf) {
  const std::string path = SamplePath(info.dir, index);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Err(ErrnoText("create", path));
  FillSample(info.seed, index, buf.data(), buf.size());
  Status s = WriteAll(fd, buf.data(), buf.size(), path);
  // Flush and drop the pages: otherwise the first run would read the dataset from memory.
  if (s.ok() && ::fdatasync(fd) != 0) s = Err(ErrnoText("fdatasync", path));
  if (s.ok()) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return s;
}

}  // namespace

std::string SamplePath(const std::string& dir, int64_t index) {
  char name[40];
  std::snprintf(name, sizeof name, "/sample-%08lld.bin", static_cast<long long>(index));
  return dir + name;
}

void FillSample(uint64_t seed, int64_t index, uint8_t* buf, size_t n) {
  SplitMix64 rng(MixSeed(seed, static_cast<uint64_t>(index)));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = rng.Next();
    std::memcpy(buf + i, &w, 8);
  }
  if (i < n) {
    uint64_t w = rng.Next();
    std::memcpy(buf + i, &w, n - i);
  }
}

Status GenerateDataset(const DatasetInfo& info, const SampleWritten& on_sample) {
  std::error_code ec;
  std::filesystem::create_directories(info.dir, ec);
  if (ec) return Err("create directory " + info.dir + ": " + ec.message());
  const std::string manifest = info.dir + "/" + kManifestName;
  auto old = ReadManifest(info.dir);
  std::filesystem::remove(manifest, ec);
  if (ec) return Err("remove " + manifest + ": " + ec.message());

  std::vector<uint8_t> buf(info.sample_size);
  for (int64_t i = 0; i < info.samples; ++i) {
    if (Status s = WriteSample(info, i, buf); !s.ok()) return s;
    if (on_sample) on_sample(i + 1);
  }
  if (old.ok() && old->has_value()) {
    for (int64_t i = info.samples; i < (*old)->samples; ++i) {
      std::filesystem::remove(SamplePath(info.dir, i), ec);
    }
  }

  const std::string tmp = manifest + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# written by codl-victim gen-data; run reads the shape from here\n"
        << "format=1\nsamples=" << info.samples << "\nsample_size=" << info.sample_size
        << "\nseed=" << info.seed << "\n";
    out.flush();
    if (!out) return Err("write " + tmp + " failed");
  }
  std::filesystem::rename(tmp, manifest, ec);
  if (ec) return Err("rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

Result<std::optional<DatasetInfo>> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  std::ifstream in(path);
  if (!in) return std::optional<DatasetInfo>();
  DatasetInfo info;
  info.dir = dir;
  bool have_samples = false, have_size = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    try {
      if (key == "samples") {
        info.samples = std::stoll(value);
        have_samples = true;
      } else if (key == "sample_size") {
        info.sample_size = std::stoull(value);
        have_size = true;
      } else if (key == "seed") info.seed = std::stoull(value);
    } catch (const std::exception&) {
      return Err(path + ": bad value '" + value + "' for " + key +
                 "; regenerate with codl-victim gen-data");
    }
  }
  if (!have_samples || !have_size || info.samples <= 0 || info.sample_size == 0) {
    return Err(path + " is incomplete; regenerate with codl-victim gen-data");
  }
  return std::optional<DatasetInfo>(info);
}

}  // namespace codl::victim
