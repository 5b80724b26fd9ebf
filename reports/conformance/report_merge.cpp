#include "report_merge.h"

#include <algorithm>
#include <map>
#include <utility>

namespace verbfault::reports {

namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  if (seeds.empty()) return "none";
  return std::to_string(seeds.size()) + " (" + std::to_string(seeds.front()) + ".." +
         std::to_string(seeds.back()) + ")";
}

// A field the parts must agree on: the first part's value against each.
template <typename Field, typename Show>
void agree(const std::vector<PartReport>& parts, const char* name, Field field, Show show) {
  const PartReport& first = parts.front();
  for (const PartReport& part : parts)
    if (!(field(part.report) == field(first.report)))
      throw ReportMergeError("report merge: " + first.dir.string() + " and " + part.dir.string() +
                             " disagree on the " + name + ": '" + show(field(first.report)) +
                             "' and '" + show(field(part.report)) + "': expected parts of one run");
}

void check_shards(const std::vector<PartReport>& parts) {
  const auto sharded = [](const PartReport& part) { return part.report.shard.has_value(); };
  if (std::none_of(parts.begin(), parts.end(), sharded)) return;
  const PartReport& first = *std::find_if(parts.begin(), parts.end(), sharded);
  const unsigned count = first.report.shard->count;
  std::map<unsigned, const PartReport*> seen;
  for (const PartReport& part : parts) {
    if (!part.report.shard)
      throw ReportMergeError("report merge: " + part.dir.string() + " is not a shard, " +
                             first.dir.string() + " is: expected the shards of one run only");
    if (part.report.shard->count != count)
      throw ReportMergeError("report merge: " + first.dir.string() + " is a shard of " +
                             std::to_string(count) + ", " + part.dir.string() + " of " +
                             std::to_string(part.report.shard->count) +
                             ": expected the shards of one run");
    const auto [at, added] = seen.emplace(part.report.shard->index, &part);
    if (!added)
      throw ReportMergeError("report merge: shard " + std::to_string(part.report.shard->index) +
                             "/" + std::to_string(count) + " is given twice: " +
                             at->second->dir.string() + " and " + part.dir.string());
  }
  for (unsigned index = 1; index <= count; ++index)
    if (seen.count(index) == 0)
      throw ReportMergeError("report merge: shard " + std::to_string(index) + "/" +
                             std::to_string(count) + " is missing: expected all " +
                             std::to_string(count) + " shards");
}

}  // namespace

Report merge_reports(const std::vector<PartReport>& parts, const fs::path& out_dir) {
  if (parts.empty()) throw ReportMergeError("report merge: expected at least one report");
  const auto same = [](const auto& value) { return value; };
  agree(
      parts, "mode", [](const Report& r) { return r.mode; }, same);
  agree(
      parts, "application", [](const Report& r) { return r.application; }, same);
  agree(
      parts, "command", [](const Report& r) { return r.command; }, joined);
  agree(
      parts, "battery", [](const Report& r) { return r.battery; }, same);
  agree(
      parts, "seeds", [](const Report& r) { return r.seeds; }, seeds_text);
  agree(
      parts, "fault classes", [](const Report& r) { return r.classes; }, joined);
  agree(
      parts, "build", [](const Report& r) { return r.build; }, same);
  agree(
      parts, "verbfault version", [](const Report& r) { return r.verbfault_version; }, same);
  agree(
      parts, "race windows", [](const Report& r) { return r.race_windows; }, joined);
  check_shards(parts);

  Report merged = parts.front().report;
  merged.shard.reset();
  merged.entries.clear();
  merged.duration_seconds = 0;
  merged.provider.clear();
  // A part whose runs opened no device says nothing about the provider;
  // two that name different ones ran on different machines' fabrics.
  const PartReport* provider_part = nullptr;
  for (const PartReport& part : parts) {
    merged.started_at = std::min(merged.started_at, part.report.started_at);
    merged.duration_seconds = std::max(merged.duration_seconds, part.report.duration_seconds);
    if (part.report.provider == "no device opened") continue;
    if (provider_part && part.report.provider != merged.provider)
      throw ReportMergeError("report merge: " + provider_part->dir.string() + " and " +
                             part.dir.string() + " disagree on the provider: '" + merged.provider +
                             "' and '" + part.report.provider + "': expected parts of one run");
    merged.provider = part.report.provider;
    provider_part = &part;
  }
  if (!provider_part) merged.provider = "no device opened";

  // The battery's order, then the seeds': where each entry goes.
  std::map<std::string, std::size_t> class_rank;
  for (const std::string& name : merged.classes) class_rank.emplace(name, class_rank.size());
  std::map<std::uint64_t, std::size_t> seed_rank;
  for (const std::uint64_t seed : merged.seeds) seed_rank.emplace(seed, seed_rank.size());
  std::map<std::pair<std::size_t, std::size_t>, std::pair<const PartReport*, Entry>> ordered;
  for (const PartReport& part : parts) {
    for (const Entry& entry : part.report.entries) {
      const std::string name = entry.fault_class + " seed " + std::to_string(entry.seed);
      auto rank = class_rank.find(entry.fault_class);
      if (rank == class_rank.end()) {
        if (!merged.classes.empty())
          throw ReportMergeError("report merge: " + part.dir.string() + ": entry " + name +
                                 ": its fault class is not among the report's classes");
        // A report older than `classes` keeps the order the parts give.
        rank = class_rank.emplace(entry.fault_class, class_rank.size()).first;
      }
      const auto seed = seed_rank.find(entry.seed);
      if (seed == seed_rank.end())
        throw ReportMergeError("report merge: " + part.dir.string() + ": entry " + name +
                               ": its seed is not among the report's seeds");
      Entry copy = entry;
      if (!copy.replay_file.empty())
        copy.replay_file =
            fs::relative(fs::absolute(part.dir / copy.replay_file), fs::absolute(out_dir)).string();
      const auto [at, added] =
          ordered.emplace(std::pair{rank->second, seed->second}, std::pair{&part, std::move(copy)});
      if (!added)
        throw ReportMergeError("report merge: entry " + name + " is in both " +
                               at->second.first->dir.string() + " and " + part.dir.string() +
                               ": expected parts that do not overlap");
    }
  }
  for (auto& [rank, part_entry] : ordered) merged.entries.push_back(std::move(part_entry.second));
  return merged;
}

}  // namespace verbfault::reports
