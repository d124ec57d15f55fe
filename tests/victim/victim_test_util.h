// What the victim tests share: a scratch folder that removes itself, and reading a file whole.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace codl::victim::test_util {

// A fresh folder under the temp area, named after the test binary's `tag`, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("codl-victim-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace codl::victim::test_util
