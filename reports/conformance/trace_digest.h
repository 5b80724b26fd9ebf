// What a report keeps of a run's trace (JSON Lines, docs/trace-format.md
// "The trace"): the record count, the devices opened, an excerpt around
// the first fault and the first finding, and the marks of its timeline.
// Reads the records as data; knows nothing of the harness that wrote them.
#pragma once

#include "report.h"

#include <filesystem>
#include <string>
#include <vector>

namespace verbfault::reports {

struct TraceDigest {
  std::size_t records = 0;
  // "vfsim0 (simulated)" per device opened, in order, without repeats.
  std::vector<std::string> devices;
  std::vector<TraceLine> excerpt;
  std::vector<TimelineMark> timeline;
};

// Reads `path`; a missing or unreadable trace gives an empty digest (the
// run's log says why). Lines that are not JSON objects are counted and
// skipped.
TraceDigest digest_trace(const std::filesystem::path& path);

}  // namespace verbfault::reports
