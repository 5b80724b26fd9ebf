// The main() of a fuzzer built without libFuzzer (GCC): runs
// LLVMFuzzerTestOneInput once on each file named on the command line, and on
// each regular file of each directory named (not recursively), in name
// order. So the committed corpus is a regression test in the normal ctest
// (fuzz.<name>.corpus): an input that crashes, hangs or trips a check
// fails the test as it would stop libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional, as with libFuzzer: a fuzzer that needs no setup does not define it.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

bool run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "standalone_driver: cannot read '%s'\n", path.c_str());
    return false;
  }
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  // A copy of exactly the input's size, so that ASan sees a read past it.
  std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.empty() ? nullptr : input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE|DIR...  (runs each input once)\n", argv[0]);
    return 2;
  }
  std::size_t inputs = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code error;
    if (!fs::is_directory(arg, error)) {
      ok = run_file(arg) && ok;
      ++inputs;
      continue;
    }
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(arg, error))
      if (entry.is_regular_file()) files.push_back(entry.path());
    if (error) {
      std::fprintf(stderr, "standalone_driver: cannot list '%s': %s\n", arg.c_str(),
                   error.message().c_str());
      ok = false;
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      ok = run_file(file) && ok;
      ++inputs;
    }
  }
  std::fprintf(stderr, "standalone_driver: %zu inputs run\n", inputs);
  return ok ? 0 : 1;
}
