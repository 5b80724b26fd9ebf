// The probe's areas, one file each. An area sets up its situations on
// `device` and adds one Check per behaviour to `sink`; it never waits
// without a bound (verbs_kit.h) and runs in a child process of its own
// (main.cpp), so a provider that hangs or crashes in one area costs only
// that area's remaining checks.
#pragma once

#include "check_builder.h"

#include <string>

namespace verbfault::probe {

struct Area {
  const char* name;
  void (*run)(const std::string& device, CheckSink& sink);
};

void probe_cq_overflow(const std::string& device, CheckSink& sink);
void probe_rnr_and_retry(const std::string& device, CheckSink& sink);
void probe_flush(const std::string& device, CheckSink& sink);
void probe_poison(const std::string& device, CheckSink& sink);
void probe_events_and_acks(const std::string& device, CheckSink& sink);
void probe_async_events(const std::string& device, CheckSink& sink);
void probe_modify_qp(const std::string& device, CheckSink& sink);
void probe_size_rounding(const std::string& device, CheckSink& sink);
void probe_bad_calls(const std::string& device, CheckSink& sink);

inline constexpr Area kAreas[] = {
    {"cq_overflow", probe_cq_overflow},
    {"rnr_and_retry", probe_rnr_and_retry},
    {"flush", probe_flush},
    {"poison", probe_poison},
    {"events_and_acks", probe_events_and_acks},
    {"async_events", probe_async_events},
    {"modify_qp", probe_modify_qp},
    {"size_rounding", probe_size_rounding},
    {"bad_calls", probe_bad_calls},
};

}  // namespace verbfault::probe
