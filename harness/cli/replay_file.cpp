#include "replay_file.h"

#include "verbfault/plan.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace verbfault::cli {

namespace fs = std::filesystem;

const char* verbfault_version() {
  return VERBFAULT_VERSION;
}

std::string file_hash(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::uint64_t hash = 0xcbf29ce484222325ull;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i)
      hash = (hash ^ static_cast<unsigned char>(buffer[i])) * 0x100000001b3ull;
    if (!in) break;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, hash);
  return text;
}

std::string resolve_program(const std::string& name, bool or_basename) {
  std::error_code error;
  if (name.find('/') != std::string::npos) {
    const fs::path found = fs::absolute(name, error);
    if (!error && access(found.c_str(), X_OK) == 0) return found.string();
    const std::string base = fs::path(name).filename().string();
    return or_basename && !base.empty() ? resolve_program(base) : "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, error))
      return fs::absolute(candidate, error).string();
  }
  return "";
}

Binary binary_of(const std::string& file) {
  return {file, file.empty() ? "" : file_hash(file)};
}

void write_replay_file(const fs::path& path, const ReplayFile& replay) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << 1;
  out << YAML::Key << "verbfault" << YAML::Value << replay.verbfault_version;
  auto binary = [&](const char* key, const Binary& b) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "file" << YAML::Value << b.file;
    out << YAML::Key << "hash" << YAML::Value << b.hash;
    out << YAML::EndMap;
  };
  binary("library", replay.library);
  binary("program", replay.program);
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << replay.command;
  out << YAML::Key << "seed" << YAML::Value << replay.seed;
  if (replay.threads) out << YAML::Key << "threads" << YAML::Value << *replay.threads;
  if (!replay.settings.empty()) {
    out << YAML::Key << "settings" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : replay.settings)
      out << YAML::Key << name << YAML::Value << value;
    out << YAML::EndMap;
  }
  if (replay.plan_file) out << YAML::Key << "plan_file" << YAML::Value << *replay.plan_file;
  if (!replay.faults.empty()) out << YAML::Key << "faults" << YAML::Value << replay.faults;
  if (replay.pass_statuses != std::vector<int>{0})
    out << YAML::Key << "pass_statuses" << YAML::Value << YAML::Flow << replay.pass_statuses;
  out << YAML::Key << "expect" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "outcome" << YAML::Value << (replay.expect.fails ? "fails" : "passes");
  out << YAML::Key << "status" << YAML::Value << replay.expect.status;
  out << YAML::Key << "signature" << YAML::Value << YAML::DoubleQuoted << replay.expect.signature;
  if (replay.expect.trace_hash)
    out << YAML::Key << "trace_hash" << YAML::Value << *replay.expect.trace_hash;
  out << YAML::EndMap;
  out << YAML::EndMap;

  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << "# verbfault replay file: `verbfault replay " << path.filename().string()
         << "` runs it again\n"
         << out.c_str() << "\n";
    if (!file) throw ReplayFileError(path.string() + ": cannot write the replay file");
  }
  fs::rename(temporary, path);
}

namespace {

[[noreturn]] void bad(const fs::path& path, const YAML::Node& node, const std::string& what) {
  throw ReplayFileError(path.string() + ":" + std::to_string(node.Mark().line + 1) + ": " + what);
}

template <class T>
T scalar(const fs::path& path, const YAML::Node& map, const char* key, const char* expected) {
  const YAML::Node node = map[key];
  if (!node) bad(path, map, std::string("no '") + key + "': expected " + expected);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    bad(path, node, std::string("'") + key + "': expected " + expected);
  }
}

Binary read_binary(const fs::path& path, const YAML::Node& map, const char* key) {
  const YAML::Node node = map[key];
  if (!node || !node.IsMap())
    bad(path, map, std::string("no '") + key + "': expected {file, hash}");
  return {scalar<std::string>(path, node, "file", "a path"),
          scalar<std::string>(path, node, "hash", "16 hex digits")};
}

}  // namespace

ReplayFile read_replay_file(const fs::path& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::BadFile&) {
    throw ReplayFileError(path.string() + ": cannot read the replay file");
  } catch (const YAML::Exception& error) {
    throw ReplayFileError(path.string() + ":" + std::to_string(error.mark.line + 1) +
                          ": not YAML: " + error.msg);
  }
  if (!root.IsMap()) throw ReplayFileError(path.string() + ": expected a replay file (a YAML map)");
  static const char* const known[] = {"format",    "verbfault", "library",       "program",
                                      "command",   "seed",      "threads",       "settings",
                                      "plan_file", "faults",    "pass_statuses", "expect"};
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      bad(path, entry.first,
          "unknown key '" + key +
              "': expected format, verbfault, library, program, command, seed, threads, "
              "settings, plan_file, faults, pass_statuses or expect");
  }
  if (scalar<int>(path, root, "format", "1") != 1) bad(path, root["format"], "format: expected 1");
  ReplayFile replay;
  replay.verbfault_version = scalar<std::string>(path, root, "verbfault", "a version");
  replay.library = read_binary(path, root, "library");
  replay.program = read_binary(path, root, "program");
  replay.command = scalar<std::vector<std::string>>(path, root, "command", "a list of words");
  if (replay.command.empty()) bad(path, root["command"], "command: expected the program to run");
  try {
    replay.seed = parse_seed(scalar<std::string>(path, root, "seed", "a seed"), "seed");
  } catch (const PlanError& error) {
    bad(path, root["seed"], error.what());
  }
  if (root["threads"]) replay.threads = scalar<std::string>(path, root, "threads", "a mode");
  if (const YAML::Node settings = root["settings"]) {
    if (!settings.IsMap()) bad(path, settings, "settings: expected a map NAME: value");
    for (const auto& entry : settings) {
      const std::string name = entry.first.as<std::string>();
      if (name.rfind("VERBFAULT_", 0) != 0)
        bad(path, entry.first, "settings: '" + name + "': expected a VERBFAULT_ variable");
      replay.settings.emplace_back(name, entry.second.as<std::string>());
    }
  }
  if (root["plan_file"]) {
    const fs::path plan = scalar<std::string>(path, root, "plan_file", "a path");
    replay.plan_file =
        (plan.is_absolute() ? plan : fs::absolute(path).parent_path() / plan).string();
  }
  if (root["faults"])
    replay.faults = scalar<std::vector<std::string>>(path, root, "faults", "one-line rules");
  for (const std::string& fault : replay.faults) {
    try {
      parse_rule(fault, path.string() + ": faults");
    } catch (const PlanError& error) {
      throw ReplayFileError(error.what());
    }
  }
  if (root["pass_statuses"]) {
    replay.pass_statuses =
        scalar<std::vector<int>>(path, root, "pass_statuses", "a list of exit statuses");
    for (int status : replay.pass_statuses)
      if (status < 0 || status > 255)
        bad(path, root["pass_statuses"], "pass_statuses: expected exit statuses 0..255");
  }
  const YAML::Node expect = root["expect"];
  if (!expect || !expect.IsMap()) bad(path, root, "no 'expect': expected {outcome, status, ...}");
  const std::string outcome = scalar<std::string>(path, expect, "outcome", "fails or passes");
  if (outcome != "fails" && outcome != "passes")
    bad(path, expect["outcome"], "outcome '" + outcome + "': expected fails or passes");
  replay.expect.fails = outcome == "fails";
  replay.expect.status = scalar<int>(path, expect, "status", "an exit status");
  if (expect["signature"])
    replay.expect.signature = scalar<std::string>(path, expect, "signature", "a signature");
  if (expect["trace_hash"])
    replay.expect.trace_hash = scalar<std::string>(path, expect, "trace_hash", "16 hex digits");
  return replay;
}

ReplayFile replay_of(const SeedRun& run, const Outcome& outcome,
                     const std::vector<int>& pass_statuses) {
  ReplayFile replay;
  replay.verbfault_version = verbfault_version();
  replay.library = binary_of(fs::absolute(run.library).string());
  replay.program = binary_of(resolve_program(run.command.front()));
  replay.command = run.command;
  replay.seed = outcome.seed;
  replay.threads = run.threads ? run.threads : engine::threads_setting();
  replay.settings = run.settings.empty() ? engine::replay_settings() : run.settings;
  if (run.plan_file) replay.plan_file = fs::absolute(*run.plan_file).string();
  replay.faults = run.faults;
  replay.pass_statuses = pass_statuses;
  replay.expect.fails = outcome.failed;
  replay.expect.status = outcome.status;
  replay.expect.signature = outcome.signature;
  replay.expect.trace_hash = outcome.trace_hash;
  return replay;
}

}  // namespace verbfault::cli
