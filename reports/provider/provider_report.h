// The provider report: what `verbfault provider-report` found when it ran
// its battery of verbs semantics against one provider (a simulated device
// or a real one), one entry per check. Filled by the probe program
// (probe/), written and read by provider_report_json.h, shown side by side
// by markdown_table.h, held against a committed report by
// report_compare.h. Its JSON form is specified by
// reports/schema/provider-report.schema.json (kFormat, version kVersion).
// Plain values: no verbs here.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::provider_report {

inline constexpr std::string_view kFormat = "verbfault-provider-report";
// Raised when a field changes meaning or goes away; new optional fields
// keep the version.
inline constexpr int kVersion = 1;

// What the provider's behaviour is, held against the man page or IBTA
// section a check cites.
enum class Verdict {
  conforms,
  deviates,
  unsupported,   // the verb returned EOPNOTSUPP or ENOSYS
  inconclusive,  // the check could not set up its situation (the note says why)
};
inline constexpr Verdict kVerdicts[] = {Verdict::conforms, Verdict::deviates, Verdict::unsupported,
                                        Verdict::inconclusive};
std::string_view name(Verdict verdict);
std::optional<Verdict> verdict_from_name(std::string_view text);

// One check: one behaviour of one verb (or one chain of consequences).
struct Check {
  std::string id;        // "area.name", e.g. "cq_overflow.cq_err_event"
  std::string title;     // one line for people
  std::string spec;      // what it cites: "ibv_poll_cq(3)", "IBA 10.3.1"
  std::string expected;  // the behaviour the cited text asks for
  std::string observed;  // what the provider did, in words
  nlohmann::json value;  // the same as a value, compared between runs
  Verdict verdict = Verdict::inconclusive;
  std::string note;  // optional: why inconclusive, or what else was seen

  // The part of the id before the first dot.
  std::string_view area() const;
};

// The device the probe ran against, as ibv_query_device / ibv_query_port
// describe it.
struct ProviderInfo {
  std::string device;      // "rxe0", "vfsim0"
  std::string node_type;   // ibv_node_type_str
  std::string link_layer;  // "InfiniBand", "Ethernet"
  std::string fw_ver;
  unsigned vendor_id = 0;
  unsigned vendor_part_id = 0;
  unsigned hw_ver = 0;
  std::string kernel;  // uname -r of the machine it ran on
};

struct ProviderReport {
  ProviderInfo provider;
  std::string generator;  // "verbfault-provider-probe 0.1.0"
  std::vector<Check> checks;

  const Check* find(std::string_view id) const;
  std::size_t count(Verdict verdict) const;
};

}  // namespace verbfault::provider_report
