// verbfault-provider-probe: runs the provider report's battery of verbs
// semantics against one device and prints the report (JSON,
// reports/schema/provider-report.schema.json) on stdout.
//
//   verbfault-provider-probe --device NAME [--area NAME]... [--area-timeout S]
//   verbfault-provider-probe --list        the devices, one a line
//
// Plain libibverbs, like an application: it runs unmodified on any
// provider; `verbfault provider-report` runs it, with libverbfault.so
// preloaded for a simulated device.
//
// Each area runs in a child process of its own with a wall-clock bound
// (bounded.h): an area that hangs or crashes is killed and reported as an
// inconclusive "AREA.ran_to_end" check, the checks it finished are kept,
// and the next area runs. The parent opens the device only to describe it
// and closes it before the first fork.
//
// Exit status: 0 with a report (whatever its verdicts), 2 when the device
// is not there (one line on stderr naming the devices found), 125 for a
// usage error.
#include "areas.h"
#include "bounded.h"
#include "provider_report_json.h"
#include "verbs_kit.h"

#include <sys/utsname.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace verbfault;
using namespace verbfault::probe;

std::vector<std::string> device_names() {
  std::vector<std::string> out;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return out;
  for (int i = 0; i < count; ++i) out.push_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return out;
}

const char* link_layer_name(uint8_t layer) {
  switch (layer) {
    case IBV_LINK_LAYER_INFINIBAND:
      return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    default:
      return "unspecified";
  }
}

provider_report::ProviderInfo describe(const std::string& device) {
  provider_report::ProviderInfo info;
  info.device = device;
  utsname host{};
  if (uname(&host) == 0) info.kernel = host.release;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  for (int i = 0; list != nullptr && i < count; ++i) {
    if (device != ibv_get_device_name(list[i])) continue;
    info.node_type = ibv_node_type_str(list[i]->node_type);
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) break;
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0) {
      info.fw_ver = attr.fw_ver;
      info.vendor_id = attr.vendor_id;
      info.vendor_part_id = attr.vendor_part_id;
      info.hw_ver = attr.hw_ver;
    }
    ibv_port_attr port{};
    if (ibv_query_port(ctx, 1, &port) == 0) info.link_layer = link_layer_name(port.link_layer);
    ibv_close_device(ctx);
  }
  if (list != nullptr) ibv_free_device_list(list);
  return info;
}

// The checks an area's child wrote, one JSON line each; and, when the
// child did not end by itself, why.
void collect(const Area& area, const Bounded& run, provider_report::ProviderReport& report) {
  std::istringstream lines(run.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    try {
      report.checks.push_back(provider_report::check_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception&) {
      // A line cut short by the kill: the check was not finished.
    }
  }
  if (!run.timed_out && run.signal == 0 && run.exit_status == 0) return;
  std::string what = run.timed_out ? "killed at the area's time limit"
                     : run.signal  ? std::string("died of signal ") + strsignal(run.signal)
                                   : "exited with status " + std::to_string(run.exit_status);
  report.checks.push_back({std::string(area.name) + ".ran_to_end",
                           std::string("the ") + area.name + " area ran to its end", "(the probe)",
                           "every check of the area decided", what,
                           run.timed_out ? "timeout" : what, provider_report::Verdict::inconclusive,
                           "the checks after the last one listed were not run"});
}

int usage(const char* what) {
  std::fprintf(stderr, "verbfault-provider-probe: %s\n", what);
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  std::vector<std::string> only;
  int area_timeout_s = 60;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      list = true;
    } else if ((arg == "--device" || arg == "--area" || arg == "--area-timeout") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--device") device = value;
      if (arg == "--area") only.push_back(value);
      if (arg == "--area-timeout") area_timeout_s = std::atoi(value.c_str());
    } else {
      return usage(("unknown argument " + arg +
                    "; expected --device NAME [--area NAME]... [--area-timeout S] or --list")
                       .c_str());
    }
  }
  const std::vector<std::string> names = device_names();
  if (list) {
    for (const std::string& name : names) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (device.empty()) return usage("expected --device NAME");
  if (area_timeout_s <= 0) return usage("--area-timeout expects a positive number of seconds");
  for (const std::string& name : only) {
    bool known = false;
    for (const Area& area : kAreas) known |= name == area.name;
    if (!known) return usage(("unknown area " + name).c_str());
  }
  bool found = false;
  std::string all;
  for (const std::string& name : names) {
    found |= name == device;
    all += (all.empty() ? "" : ", ") + name;
  }
  if (!found) {
    std::fprintf(stderr, "verbfault-provider-probe: no device %s; found: %s\n", device.c_str(),
                 all.empty() ? "none" : all.c_str());
    return 2;
  }

  provider_report::ProviderReport report;
  report.generator = std::string("verbfault-provider-probe ") + VERBFAULT_VERSION;
  report.provider = describe(device);
  for (const Area& area : kAreas) {
    if (!only.empty() && std::find(only.begin(), only.end(), area.name) == only.end()) continue;
    const Bounded run = run_bounded(
        [&](int fd) {
          CheckSink sink(fd);
          area.run(device, sink);
        },
        area_timeout_s * 1000);
    collect(area, run, report);
  }
  std::fputs(provider_report::to_json_text(report).c_str(), stdout);
  return 0;
}
