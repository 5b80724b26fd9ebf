#include "run_group.h"

#include "fork_server.h"
#include "journal_recovery.h"
#include "process.h"
#include "process_group.h"
#include "fabric_files.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace verbfault::cli {

namespace fs = std::filesystem;

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What a process said at its end (VERBFAULT_SUMMARY lines
// "pid=P seed=S hash=H records=R"), by pid: a program's forked children
// say theirs too, under their own pids.
struct Said {
  std::uint64_t hash = 0;
  std::uint64_t records = 0;
};
std::map<pid_t, Said> read_summary(const std::string& file) {
  std::map<pid_t, Said> said;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    long pid = 0;
    unsigned long long seed = 0, records = 0;
    std::uint64_t hash = 0;
    if (std::sscanf(line.c_str(), "pid=%ld seed=%llu hash=%" SCNx64 " records=%llu", &pid, &seed,
                    &hash, &records) == 4)
      said[static_cast<pid_t>(pid)] = {hash, records};
  }
  return said;
}

std::string program_name(const Command& command) {
  return fs::path(command.front()).filename().string();
}

std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

}  // namespace

std::uint64_t combined_trace_hash(const std::vector<std::uint64_t>& hashes) {
  std::uint64_t h = hashes.size();
  for (std::uint64_t hash : hashes) h = splitmix64(h ^ hash);
  return h;
}

namespace {

// The names in the folder of `trace` that are `trace` with a tag inserted
// before its extension (record::tagged_trace_path), as (tag, path), by
// name: one listing of the folder however many tags are looked for (a
// sweep judges every seed by them). Nothing for a trace that is not a file
// to create (a device: every process's trace is the device itself).
std::vector<std::pair<std::string, std::string>> tagged_traces(const std::string& trace) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code error;
  if (fs::exists(trace, error) && !fs::is_regular_file(trace, error)) return found;
  const fs::path path(trace);
  const std::string stem = path.stem().string();
  const std::string extension = path.extension().string();
  const std::string journal = extension + ".journal";
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  for (fs::directory_iterator entry(folder, error), end; !error && entry != end;
       entry.increment(error)) {
    std::string name = entry->path().filename().string();
    if (name.size() <= stem.size() + 1 || name.compare(0, stem.size(), stem) != 0 ||
        name[stem.size()] != '.')
      continue;
    // A child killed before its end left only its journal: named for the
    // trace it would have written.
    if (name.size() > journal.size() && name.ends_with(journal))
      name.resize(name.size() - std::string_view(".journal").size());
    else if (!name.ends_with(extension))
      continue;
    if (name.size() <= stem.size() + extension.size()) continue;
    std::string tag = name.substr(stem.size(), name.size() - stem.size() - extension.size());
    found.emplace_back(std::move(tag), (path.parent_path() / name).string());
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

// `tag` is ".fork<N>" one or more times (record::forked_trace_path).
bool is_fork_tag(std::string_view tag) {
  if (tag.empty()) return false;
  for (std::size_t at = 0; at < tag.size();) {
    if (tag.compare(at, 5, ".fork") != 0 || at + 5 >= tag.size() ||
        !std::isdigit(static_cast<unsigned char>(tag[at + 5])))
      return false;
    at += 5;
    while (at < tag.size() && std::isdigit(static_cast<unsigned char>(tag[at]))) ++at;
  }
  return true;
}

}  // namespace

std::vector<std::pair<std::size_t, std::string>> existing_process_traces(const std::string& trace) {
  std::vector<std::pair<std::size_t, std::string>> found;
  for (auto& [tag, path] : tagged_traces(trace)) {
    // ".<index>", the index as process_trace_path writes it (no leading zeros).
    if (tag.size() < 2 || tag.size() > 4) continue;
    std::size_t index = 0;
    bool digits = true;
    for (std::size_t i = 1; i < tag.size() && digits; ++i) {
      digits = std::isdigit(static_cast<unsigned char>(tag[i])) != 0;
      index = index * 10 + static_cast<std::size_t>(tag[i] - '0');
    }
    if (!digits || index >= kMaxProcessTraces || std::to_string(index) != tag.substr(1)) continue;
    std::error_code ignored;
    if (fs::is_regular_file(path, ignored)) found.emplace_back(index, std::move(path));
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> existing_forked_traces(const std::string& trace) {
  std::vector<std::string> found;
  for (auto& [tag, path] : tagged_traces(trace))
    if (is_fork_tag(tag)) found.push_back(std::move(path));
  return found;
}

namespace {

// Removes what an earlier run left under the names this run's forked
// children take (their traces and journals).
void remove_forked_traces(const std::string& trace) {
  for (const std::string& path : existing_forked_traces(trace)) {
    std::error_code ignored;
    fs::remove(path, ignored);
    fs::remove(path + ".journal", ignored);
  }
}

// Renders the journals of forked children killed before their end; false
// when a trace cannot be written (recover_journal said why).
bool recover_forked_traces(const std::string& trace, const std::string& parent) {
  bool written = true;
  for (const std::string& path : existing_forked_traces(trace))
    written &= recover_journal(path, 0, "a child " + parent + " forked");
  return written;
}

}  // namespace

CommandsEnd run_commands(const std::vector<Command>& commands, const CommandsRun& run) {
  const bool several = commands.size() > 1;
  // Each group of processes its own fabric (--check-determinism runs two).
  // Of one width whatever the pid (pid_max is at most 2^22, 7 digits):
  // the simulated device makes names from the fabric's on the program's
  // own heap, and a name one byte longer moves the program's later blocks
  // (wr_ids that are heap addresses would differ between the runs of one
  // seed).
  static unsigned groups = 0;
  char tag_text[32];
  std::snprintf(tag_text, sizeof tag_text, "%07d-%06u", static_cast<int>(getpid()), ++groups);
  const std::string tag = tag_text;
  const bool fabric_given = std::getenv("VERBFAULT_FABRIC") != nullptr;
  const std::string summary =
      several ? (fs::temp_directory_path() / ("verbfault-" + tag + ".summary")).string() : "";
  if (several) fs::remove(summary);
  // A single command may be a parallel launcher (mpirun -np N): each rank
  // writes its own trace, process_trace_path(T, rank) (interposer/
  // config.cpp); those of an earlier run under the same name go first, so
  // that the ones found after the run are this run's.
  if (!several && run.trace) {
    for (const auto& [index, path] : existing_process_traces(*run.trace)) {
      std::error_code ignored;
      fs::remove(path, ignored);
      remove_forked_traces(path);
    }
    remove_forked_traces(*run.trace);
  }
  if (several && run.trace)
    for (std::size_t i = 0; i < commands.size(); ++i)
      remove_forked_traces(process_trace_path(*run.trace, i));

  CommandsEnd end;
  std::vector<GroupMember> members;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    GroupMember member{program_name(commands[i]), commands[i], run.environment};
    auto& environment = member.environment;
    if (!fabric_given) environment["VERBFAULT_FABRIC"] = "run-" + tag;
    if (std::getenv("VERBFAULT_FABRIC_SIZE") == nullptr)
      environment["VERBFAULT_FABRIC_SIZE"] = std::to_string(commands.size());
    if (several)
      environment["VERBFAULT_PROC"] = std::to_string(i);
    else if (!fabric_given && std::getenv("VERBFAULT_PROC") == nullptr)
      environment["VERBFAULT_PROC"] = "0";
    if (run.trace) {
      end.traces.push_back(several ? process_trace_path(*run.trace, i) : *run.trace);
      environment["VERBFAULT_TRACE"] = end.traces.back();
    }
    if (several) environment["VERBFAULT_SUMMARY"] = summary;
    environment["VERBFAULT_STARTED"] =
        (fs::temp_directory_path() / ("verbfault-" + tag + "." + std::to_string(i) + ".started"))
            .string();
    fs::remove(environment["VERBFAULT_STARTED"]);
    members.push_back(std::move(member));
  }

  GroupOptions options;
  options.timeout_seconds = run.timeout_seconds;
  options.peer_grace_seconds = run.peer_grace_seconds;
  options.start_wait_seconds = run.start_wait_seconds;
  // A seed of a sweep or conform run whose program waits in a fork server
  // at its first verbs call: a child of that, not a new exec.
  const std::vector<MemberEnd> ends = !several && g_seed_server != nullptr
                                          ? std::vector{g_seed_server->run(members[0], options)}
                                          : run_group(members, options);
  // Every process has ended: the fabric named for this run has no member
  // left, nor will it (each run names its own), so its file in /dev/shm
  // would only pile up.
  if (!fabric_given) {
    if (const int error = sim::wire::remove_status_table("run-" + tag))
      std::fprintf(stderr, "verbfault: cannot remove %s: %s\n",
                   sim::wire::status_table_path("run-" + tag).c_str(), std::strerror(error));
  }

  // A process the harness never started in (ld.so ignored LD_PRELOAD: a
  // static or setuid program, a library that does not load or is not the
  // harness) ran without faults, checks or trace: its status is no result.
  bool unharnessed = false;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const std::string started = members[i].environment.at("VERBFAULT_STARTED");
    std::error_code ignored;
    const bool said = fs::remove(started, ignored);
    if (said || ends[i].by != MemberEnd::By::itself || ends[i].status == exit_status::kUsage ||
        ends[i].status == exit_status::kNotFound || ends[i].status == exit_status::kCannotExecute)
      continue;
    unharnessed = true;
    std::fprintf(stderr,
                 "verbfault: %s: the harness did not start in it (LD_PRELOAD=%s was ignored: a "
                 "statically linked or setuid program, or a library that does not load or is "
                 "not libverbfault.so); its %s is no result\n",
                 several ? ("process " + std::to_string(i) + " (" + members[i].name + ")").c_str()
                         : members[i].name.c_str(),
                 members[i].environment.at("LD_PRELOAD").c_str(),
                 describe_status(ends[i].status).c_str());
  }

  if (!several) {
    end.status = unharnessed ? exit_status::kUsage : ends.front().status;
    if (run.trace && !recover_journal(*run.trace, ends.front().status))
      end.status = exit_status::kUsage;
    if (run.trace && !recover_forked_traces(*run.trace, "the program"))
      end.status = exit_status::kUsage;
    // The ranks' traces, after the launcher's, in rank order (a rank's is
    // named by its process index, VERBFAULT_PROC + 1 + rank).
    if (run.trace)
      for (const auto& [index, path] : existing_process_traces(*run.trace)) {
        if (!recover_journal(path, ends.front().status, "process " + std::to_string(index)) ||
            !recover_forked_traces(path, "process " + std::to_string(index)))
          end.status = exit_status::kUsage;
        end.traces.push_back(path);
        std::fprintf(stderr, "verbfault: process %zu (a rank %s started): trace %s\n", index,
                     members[0].name.c_str(), path.c_str());
      }
    return end;
  }

  const std::map<pid_t, Said> said = read_summary(summary);
  fs::remove(summary);
  std::vector<std::uint64_t> hashes;
  std::uint64_t records = 0;
  std::optional<std::size_t> unknown;  // the first process that said nothing
  bool trace_lost = false;             // a trace that could not be written
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const std::string who = "process " + std::to_string(i) + " (" + members[i].name + ")";
    if (ends[i].by == MemberEnd::By::not_started) {
      std::fprintf(stderr, "verbfault: %s: not started (the run was ending before its turn)\n",
                   who.c_str());
      continue;
    }
    if (run.trace && !recover_journal(end.traces[i], ends[i].status, who)) trace_lost = true;
    if (run.trace && !recover_forked_traces(end.traces[i], who)) trace_lost = true;
    std::string line = "verbfault: " + who + ": " + describe_status(ends[i].status);
    if (ends[i].by == MemberEnd::By::peer_grace) line += " (ended: --peer-grace)";
    if (ends[i].by == MemberEnd::By::timeout) line += " (ended: --timeout)";
    const auto found = said.find(ends[i].pid);
    if (found != said.end()) {
      line += ", trace hash " + hex(found->second.hash) + " (" +
              std::to_string(found->second.records) + " records)";
      hashes.push_back(found->second.hash);
      records += found->second.records;
    } else {
      // SIGKILL, _exit(2) (a shell's exit), or a program the harness is not in.
      line += ", no trace hash (it ended without the harness's end of run)";
      if (!unknown) unknown = i;
    }
    if (run.trace) line += ", trace " + end.traces[i];
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  // The run's line, last: what sweeps and replay files read as its hash.
  if (unknown)
    std::fprintf(stderr, "verbfault: seed %llu, trace hash unknown: process %zu left none\n",
                 static_cast<unsigned long long>(run.seed), *unknown);
  else
    std::fprintf(stderr, "verbfault: seed %llu, trace hash %s (%zu process%s, %llu records)\n",
                 static_cast<unsigned long long>(run.seed),
                 hex(combined_trace_hash(hashes)).c_str(), hashes.size(),
                 hashes.size() == 1 ? "" : "es", static_cast<unsigned long long>(records));

  if (trace_lost || unharnessed) end.status = exit_status::kUsage;
  for (std::size_t i = 0; i < ends.size() && end.status != exit_status::kUsage; ++i) {
    if (ends[i].status == 0 || ends[i].by == MemberEnd::By::peer_grace) continue;
    end.status = ends[i].status;
    std::fprintf(stderr, "verbfault: the run's status is process %zu's: %s\n", i,
                 describe_status(end.status).c_str());
    break;
  }
  return end;
}

}  // namespace verbfault::cli
