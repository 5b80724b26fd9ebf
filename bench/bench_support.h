// What both benchmarks (interposer_overhead, local_fabric) share: their
// buffers and the collection of the times their ratios are made of.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace verbfault::bench {

// Page-aligned memory, touched once so that no benchmark pays for page
// faults or reads the shared zero page.
struct Buffer {
  explicit Buffer(std::size_t size)
      : size(size),
        bytes(static_cast<char*>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096))) {
    if (bytes != nullptr) std::memset(bytes.get(), 0x5a, size);
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::size_t size;
  std::unique_ptr<char, Free> bytes;
  uint64_t address(std::size_t offset = 0) const {
    return reinterpret_cast<uintptr_t>(bytes.get()) + offset;
  }
};

// A console reporter that also keeps, by benchmark name, the real time per
// iteration and the bytes per second: the median of the repetitions when
// there are several, else the single run. The ratios are made of these.
class RunCollector : public ::benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const std::string name = run.run_name.str();
      const bool single = run.run_type == Run::RT_Iteration && !times_.contains(name);
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (!single && !median) continue;
      times_[name] = run.GetAdjustedRealTime();
      if (auto it = run.counters.find("bytes_per_second"); it != run.counters.end())
        rates_[name] = it->second.value;
    }
  }

 protected:
  // The real time per iteration of benchmark `name` (run with
  // UseRealTime), 0 when it did not run.
  double real_time(const std::string& name) const {
    auto it = times_.find(name + "/real_time");
    return it == times_.end() ? 0.0 : it->second;
  }
  std::map<std::string, double> times_;
  std::map<std::string, double> rates_;
};

}  // namespace verbfault::bench
