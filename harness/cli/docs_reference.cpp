// Keeps the generated parts of the references equal to their sources:
// docs/cli.md's blocks to the command-line parser (each subcommand's usage
// and options: CommandLineParser::reference) and docs/checks.md's table to
// the check catalogue (observers/checkers/check_catalogue.cpp). A block is
// the text between "<!-- generated: NAME -->" and "<!-- end generated -->".
//
//   verbfault_docs_reference --check ROOT    exit 1 naming each stale block
//   verbfault_docs_reference --update ROOT   rewrite the blocks in place
//
// The test docs.references_are_current runs --check; the build target
// update-docs runs --update.
#include "check_catalogue.h"
#include "command_line.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kBegin = "<!-- generated: ";
constexpr std::string_view kEnd = "<!-- end generated -->";

std::string checks_table() {
  std::string table =
      "| id | catches | field failures | fails the run | provider |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const verbfault::checkers::CheckInfo& check : verbfault::checkers::catalogue()) {
    table += "| `" + std::string(check.id) + "` | " + std::string(check.catches) + " | " +
             std::string(check.field_failures) + " | " + (check.fails_run ? "yes" : "no") +
             " | " + (check.needs_simulated_device ? "simulated device" : "any") + " |\n";
  }
  return table;
}

// Rewrites every block of `text` named in `blocks`; the names of blocks
// whose text changed go to `stale`, names with no block to `missing`.
std::string replaced(const std::string& text, const std::map<std::string, std::string>& blocks,
                     std::string& stale, std::string& missing) {
  std::string out;
  std::map<std::string, bool> seen;
  size_t at = 0;
  for (;;) {
    const size_t begin = text.find(kBegin, at);
    if (begin == std::string::npos) break;
    const size_t name_end = text.find(" -->\n", begin);
    const size_t end = text.find(kEnd, begin);
    if (name_end == std::string::npos || end == std::string::npos) break;
    const std::string name = text.substr(begin + kBegin.size(), name_end - begin - kBegin.size());
    const size_t body = name_end + 5;
    out += text.substr(at, body - at);
    const auto block = blocks.find(name);
    const std::string old_body = text.substr(body, end - body);
    const std::string new_body = block == blocks.end() ? old_body : block->second;
    if (new_body != old_body) stale += " " + name;
    seen[name] = true;
    out += new_body;
    at = end;
  }
  out += text.substr(at);
  for (const auto& [name, body] : blocks)
    if (!seen[name]) missing += " " + name;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string_view(argv[1]) != "--check" && std::string_view(argv[1]) != "--update")) {
    std::fprintf(stderr, "usage: verbfault_docs_reference --check|--update SOURCE_ROOT\n");
    return 2;
  }
  const bool update = std::string_view(argv[1]) == "--update";
  const std::filesystem::path root = argv[2];

  std::map<std::string, std::map<std::string, std::string>> files;
  verbfault::cli::CommandLineParser parser;
  for (const auto& [name, section] : parser.reference()) files["docs/cli.md"]["cli " + name] = section;
  files["docs/checks.md"]["checks"] = checks_table();

  int status = 0;
  for (const auto& [file, blocks] : files) {
    std::ifstream in(root / file);
    if (!in) {
      std::fprintf(stderr, "verbfault_docs_reference: cannot read %s\n", (root / file).c_str());
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string stale, missing;
    const std::string current = replaced(text.str(), blocks, stale, missing);
    if (!missing.empty()) {
      std::fprintf(stderr, "verbfault_docs_reference: %s has no block for:%s\n", file.c_str(),
                   missing.c_str());
      status = 1;
    }
    if (stale.empty()) continue;
    if (update) {
      std::ofstream(root / file) << current;
      std::printf("updated %s:%s\n", file.c_str(), stale.c_str());
    } else {
      std::fprintf(stderr,
                   "verbfault_docs_reference: %s is stale in:%s (cmake --build build --target "
                   "update-docs)\n",
                   file.c_str(), stale.c_str());
      status = 1;
    }
  }
  return status;
}
