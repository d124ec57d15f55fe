// libFuzzer target: codl-inject's command-line parser. The input is split at NUL bytes into
// argv words (argv[0] is fixed), so the fuzzer can produce any word list.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "injectors/codl-inject/args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> argv = {"codl-inject"};
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  if (!word.empty()) argv.push_back(word);
  (void)codl::inject::ParseArgs(argv);
  return 0;
}
