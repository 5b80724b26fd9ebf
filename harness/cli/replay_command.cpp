#include "replay_command.h"

#include "command_list.h"
#include "process.h"
#include "replay_file.h"
#include "runner.h"
#include "seed_run.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace verbfault::cli {

namespace fs = std::filesystem;

int replay(const ReplayOptions& options) {
  ReplayFile file;
  try {
    file = read_replay_file(options.file);
  } catch (const ReplayFileError& error) {
    std::fprintf(stderr, "verbfault: %s\n", error.what());
    return exit_status::kUsage;
  }

  SeedRun run;
  run.seed = file.seed;
  if (file.plan_file) {
    if (!fs::exists(*file.plan_file)) {
      std::fprintf(stderr, "verbfault: %s: plan_file '%s': no such file\n", options.file.c_str(),
                   file.plan_file->c_str());
      return exit_status::kUsage;
    }
    run.plan_file = file.plan_file;
  }
  run.faults = file.faults;
  run.threads = file.threads;
  run.settings = file.settings;
  run.library = options.library;
  run.command = file.command;
  run.timeout_seconds = options.timeout_seconds;

  // Each command's program as found now (PATH or the working directory),
  // else, for the first, where it was recorded (the file records the first
  // command's program: a server and client are usually one program).
  std::string program;
  for (const std::size_t at : program_positions(file.command)) {
    std::string found = resolve_program(file.command[at], /*or_basename=*/true);
    if (found.empty() && at == 0 && !file.program.file.empty() && fs::exists(file.program.file))
      found = file.program.file;
    if (found.empty()) {
      std::fprintf(stderr, "verbfault: %s: the program '%s' is not found%s\n", options.file.c_str(),
                   file.command[at].c_str(),
                   at == 0 ? (" (recorded: " + file.program.file + ")").c_str() : "");
      return exit_status::kNotFound;
    }
    run.command[at] = found;
    if (at == 0) program = found;
  }

  // What differs from the recorded run's build: the reason an outcome may
  // differ that is not a flake.
  std::vector<std::string> differences;
  if (file.verbfault_version != verbfault_version())
    differences.push_back("verbfault " + std::string(verbfault_version()) + " (recorded " +
                          file.verbfault_version + ")");
  const Binary library = binary_of(fs::absolute(options.library).string());
  if (library.hash != file.library.hash)
    differences.push_back("another build of the library " + library.file + " (hash " +
                          library.hash + ", recorded " + file.library.hash + ")");
  const Binary now = binary_of(program);
  if (now.hash != file.program.hash)
    differences.push_back("another build of the program " + now.file + " (hash " + now.hash +
                          ", recorded " + file.program.hash + ")");

  fs::path dir;
  try {
    if (options.out) {
      dir = *options.out;
      fs::create_directories(dir);
    } else {
      dir = make_temporary_directory("replay");
    }
  } catch (const fs::filesystem_error& error) {
    std::fprintf(stderr, "verbfault: replay: %s\n", error.what());
    return exit_status::kUsage;
  }
  std::fprintf(stderr, "verbfault: replay %s: seed %llu, expected to %s (%s)\n",
               options.file.c_str(), static_cast<unsigned long long>(file.seed),
               file.expect.fails ? "fail" : "pass", file.expect.signature.c_str());
  const Outcome outcome = run_seed(run, dir, file.pass_statuses);
  {
    std::ifstream log(log_path(dir, file.seed));
    std::cerr << log.rdbuf();
  }
  if (!options.out) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }

  const bool same_build = differences.empty();
  const bool outcome_matches = file.expect.fails
                                   ? outcome.failed && outcome.signature == file.expect.signature
                                   : !outcome.failed;
  const bool hash_matches = !file.expect.trace_hash ||
                            (outcome.trace_hash && *outcome.trace_hash == *file.expect.trace_hash);
  std::fprintf(stderr, "verbfault: replay: %s: %s%s\n", outcome.failed ? "failed" : "passed",
               outcome.signature.c_str(),
               outcome.trace_hash ? (", trace hash " + *outcome.trace_hash).c_str() : "");
  for (const std::string& difference : differences)
    std::fprintf(stderr, "verbfault: replay: not the recorded build: %s\n", difference.c_str());

  if (outcome_matches && hash_matches) {
    std::fprintf(stderr, "verbfault: replay: reproduced: %s%s\n",
                 file.expect.fails ? "the failure" : "the pass",
                 file.expect.trace_hash ? " and the trace hash" : "");
    return 0;
  }
  if (outcome_matches) {
    // The outcome is right; the trace is not the recorded one.
    if (same_build) {
      std::fprintf(stderr,
                   "verbfault: replay: NOT DETERMINISTIC: the same build gave trace hash %s, "
                   "recorded %s\n",
                   outcome.trace_hash.value_or("(none)").c_str(), file.expect.trace_hash->c_str());
      return exit_status::kNondeterministic;
    }
    std::fprintf(stderr,
                 "verbfault: replay: reproduced: %s; the trace hash differs (%s, recorded %s) "
                 "as another build may make it\n",
                 file.expect.fails ? "the failure" : "the pass",
                 outcome.trace_hash.value_or("(none)").c_str(), file.expect.trace_hash->c_str());
    return 0;
  }
  const std::string expected = file.expect.fails ? "fail with: " + file.expect.signature : "pass";
  if (same_build) {
    std::fprintf(stderr,
                 "verbfault: replay: NOT DETERMINISTIC: the same build was expected to %s\n",
                 expected.c_str());
    return exit_status::kNondeterministic;
  }
  std::fprintf(stderr, "verbfault: replay: did not reproduce with this build: expected to %s\n",
               expected.c_str());
  return 1;
}

}  // namespace verbfault::cli
