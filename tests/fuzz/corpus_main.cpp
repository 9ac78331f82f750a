// Replays fuzz inputs without libFuzzer: calls a harness's LLVMFuzzerTestOneInput() on every file
// given, and on every file of every folder given (in name order). Linked with each harness in
// the normal build, it makes the ctest tests fuzz.<name>.corpus: the harnesses keep building and
// their seed corpora keep passing with gcc, and under ASan/UBSan in the sanitizer build.
//
//   fuzz_<name>_replay PATH...     exit 0 when every input ran; a broken invariant aborts
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.hpp"

namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(arg)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: '%s' is neither a file nor a folder\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "%s: no input files found\n", argv[0]);
    return 2;
  }
  for (const fs::path& p : inputs) {
    std::vector<uint8_t> data = read_all(p);
    // An empty input still gets a valid pointer, as libFuzzer gives it.
    const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(data.empty() ? &empty : data.data(), data.size());
  }
  std::printf("%zu inputs run, all passed\n", inputs.size());
  return 0;
}
