#include "swarm.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace verbfault::cli {

namespace {

// The default palette. Rates are per opportunity of each kind (docs/cli.md, "swarm",
// "Fault plans"): errors are rare and fire once per object, event and poll
// rewrites are frequent.
constexpr std::string_view kStandard = R"(# verbfault's default swarm palette
enable: 0.5
rules:
  - kind: cq_overflow
    nth: [20, 400]
    count: 1
  - kind: flush
    probability: [0.002, 0.05]
    count: 1
  - kind: rnr_retry_exhausted
    probability: [0.002, 0.05]
    count: 1
  - kind: retry_exhausted
    probability: [0.002, 0.05]
    count: 1
  - kind: completion_error
    status: [rem_access_err, rem_op_err, rem_inv_req_err, loc_prot_err]
    probability: [0.002, 0.05]
    count: 1
  - kind: spurious_cq_event
    probability: [0.02, 0.3]
  - kind: coalesce_cq_event
    probability: [0.05, 0.5]
  - kind: partial_poll
    probability: [0.05, 0.5]
  - kind: delayed_completion
    polls: [1, 4]
    probability: [0.01, 0.2]
  - kind: async_event
    event: [qp_fatal, qp_req_err, qp_access_err]
    probability: [0.001, 0.02]
    count: 1
  - kind: verb_failure
    verb: [post_send, post_recv, req_notify_cq]
    error: [ENOMEM, EAGAIN]
    probability: [0.001, 0.02]
    count: 1
  - kind: port_down
    probability: [0.0005, 0.005]
    count: 1
    enable: 0.2
  - kind: device_fatal
    probability: [0.0005, 0.005]
    count: 1
    enable: 0.1
  - kind: cm_addr_error
    probability: [0.05, 0.5]
    count: 1
  - kind: cm_route_error
    probability: [0.05, 0.5]
    count: 1
  - kind: cm_unreachable
    probability: [0.05, 0.5]
    count: 1
  - kind: cm_reject
    probability: [0.05, 0.5]
    count: 1
  - kind: cm_lost_disconnect
    probability: [0.1, 1]
    count: 1
  - kind: cm_delay
    cm_event: [connect_request, connect_response, established, disconnected]
    delay_ms: [1, 100]
    probability: [0.05, 0.5]
  - kind: cm_disconnect
    probability: [0.002, 0.05]
    count: 1
  - kind: cm_connect_error
    probability: [0.05, 0.5]
    count: 1
  - kind: cm_timewait_exit_missing
    probability: [0.1, 1]
    count: 1
  - kind: cm_device_removal
    probability: [0.002, 0.05]
    count: 1
    enable: 0.1
)";

// splitmix64 over a counter: the swarm's draws, apart from the fault
// decisions' (which hash (seed, rule, object, opportunity)).
struct Draws {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

std::optional<double> number(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

bool whole(const YAML::Node& node) {
  return node.Scalar().find_first_of(".eE") == std::string::npos;
}

[[noreturn]] void bad(std::string_view source, const YAML::Node& node, const std::string& what) {
  throw PlanError(std::string(source) + ":" + std::to_string(node.Mark().line + 1) + ": " + what);
}

// Which pick of a range or a choice: drawn, or one of its ends (to check
// the palette).
enum class Pick { draw, low, high };

// One palette rule with its ranges and choices picked.
YAML::Node pick_rule(const YAML::Node& rule, Draws& draws, Pick pick, std::string_view source) {
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& entry : rule) {
    const std::string key = entry.first.as<std::string>();
    const YAML::Node value = entry.second;
    if (key == "enable") continue;
    if (!value.IsSequence() || key == "window") {
      out[key] = value;
      continue;
    }
    if (value.size() == 0) bad(source, value, "'" + key + "': expected a range [A, B] or a choice");
    const std::uint64_t random = draws.next();
    const auto low = number(value[0]);
    const auto high = value.size() == 2 ? number(value[1]) : std::nullopt;
    if (low && high) {
      if (*high < *low) bad(source, value, "'" + key + "': expected a range [A, B] with A <= B");
      if (whole(value[0]) && whole(value[1])) {
        const auto a = static_cast<long long>(*low), b = static_cast<long long>(*high);
        const long long n =
            pick == Pick::low ? a
            : pick == Pick::high
                ? b
                : a + static_cast<long long>(random % static_cast<std::uint64_t>(b - a + 1));
        out[key] = n;
      } else {
        // Rates spread over orders of magnitude: log-uniform when both
        // ends are positive.
        const double u = static_cast<double>(random >> 11) * 0x1p-53;
        double x = pick == Pick::low    ? *low
                   : pick == Pick::high ? *high
                   : *low > 0           ? std::exp(std::log(*low) + u * std::log(*high / *low))
                                        : *low + u * (*high - *low);
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", x);
        out[key] = std::string(text);
      }
      continue;
    }
    const std::size_t index = pick == Pick::low    ? 0
                              : pick == Pick::high ? value.size() - 1
                                                   : random % value.size();
    out[key] = value[index];
  }
  return out;
}

double enable_of(const YAML::Node& node, double fallback, std::string_view source) {
  if (!node) return fallback;
  const auto p = number(node);
  if (!p || *p < 0 || *p > 1) bad(source, node, "'enable': expected a probability in [0, 1]");
  return *p;
}

Plan to_plan(const YAML::Node& rules, std::string_view source) {
  YAML::Node root(YAML::NodeType::Map);
  root["rules"] = rules;
  YAML::Emitter out;
  out << root;
  return parse_plan_yaml(out.c_str(), source);
}

YAML::Node load(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& error) {
    throw PlanError(std::string(source) + ":" + std::to_string(error.mark.line + 1) +
                    ": not YAML: " + error.msg);
  }
  if (!root.IsMap() || !root["rules"] || !root["rules"].IsSequence() || root["rules"].size() == 0)
    throw PlanError(std::string(source) +
                    ": expected a swarm palette: a map with 'rules', a list of rules");
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (key != "rules" && key != "enable")
      bad(source, entry.first, "unknown key '" + key + "': expected rules or enable");
  }
  return root;
}

}  // namespace

std::string_view standard_palette_text() {
  return kStandard;
}

Palette Palette::parse(std::string_view yaml, std::string_view source) {
  const YAML::Node root = load(yaml, source);
  const double enable = enable_of(root["enable"], 0.5, source);
  // Both ends of every range and choice must make a valid rule.
  std::size_t index = 0;
  for (const YAML::Node& rule : root["rules"]) {
    if (!rule.IsMap()) bad(source, rule, "rule " + std::to_string(index) + ": expected a map");
    enable_of(rule["enable"], enable, source);
    for (Pick pick : {Pick::low, Pick::high}) {
      Draws unused{0};
      YAML::Node one(YAML::NodeType::Sequence);
      one.push_back(pick_rule(rule, unused, pick, source));
      try {
        to_plan(one, "");
      } catch (const PlanError& error) {
        // "<>:L: what": keep the what, give the palette's line.
        std::string what = error.what();
        const std::size_t colon = what.find(": ");
        bad(source, rule,
            "rule " + std::to_string(index) + ": " +
                (colon == std::string::npos ? what : what.substr(colon + 2)));
      }
    }
    ++index;
  }
  Palette palette;
  palette.text_ = std::string(yaml);
  palette.source_ = std::string(source);
  return palette;
}

Palette Palette::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw PlanError(path + ": cannot read the swarm palette");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Palette Palette::standard() {
  return parse(kStandard, "<default palette>");
}

Plan Palette::draw(std::uint64_t seed) const {
  const YAML::Node root = load(text_, source_);
  const double enable = enable_of(root["enable"], 0.5, source_);
  // Every rule takes its draws whether or not it is enabled: one rule's
  // enabling does not move another's rates.
  Draws draws{seed ^ 0x5357'4152'4d2d'5345ull};  // "SWARM-SE"
  YAML::Node chosen(YAML::NodeType::Sequence);
  YAML::Node fallback;
  const std::size_t count = root["rules"].size();
  const std::size_t first_choice = draws.next() % count;
  std::size_t index = 0;
  for (const YAML::Node& rule : root["rules"]) {
    const bool enabled = draws.unit() < enable_of(rule["enable"], enable, source_);
    YAML::Node picked = pick_rule(rule, draws, Pick::draw, source_);
    if (enabled) chosen.push_back(picked);
    if (index++ == first_choice) fallback = picked;
  }
  if (chosen.size() == 0) chosen.push_back(fallback);
  return to_plan(chosen, source_);
}

}  // namespace verbfault::cli
