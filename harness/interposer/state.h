// The interposer's process-wide state and the one lock that guards it.
#pragma once

#include "checkers.h"
#include "config.h"
#include "fault_engine.h"
#include "interposer.h"
#include "object_registry.h"
#include "trace.h"

#include <atomic>
#include <mutex>
#include <string_view>

namespace verbfault::interposer {

void wrap_fd(Tracked& tracked, int& fd);

// Set once before main (library constructor), read without a lock.
extern std::atomic<bool> g_active;

class State {
 public:
  static State& get();

  // The interposer lock: guards everything below. Never held across a call
  // into the provider (a provider call may block, e.g. the simulated
  // device's waits, or call back into the front door).
  std::mutex mutex;
  Config config;
  FaultEngine engine;
  ObjectRegistry registry;
  Trace trace;
  checkers::Checkers checkers;

  // Appends a trace record {"obj": name, "seq": n, ...fields} (lock held).
  void record(Tracked& object, Fields fields);
  // The same with the fields already written as JSON members ("a":1,"b":2).
  void record_raw(Tracked& object, std::string_view members);
  // Records an injected fault with the level it used (lock held).
  void record_fault(Tracked& object, const Decision& decision, std::string_view level,
                    Fields detail = Fields::object());
  // Trace fields of a work completion.
  Fields completion_fields(const ibv_wc& wc);
  // A Session: its plan and seed replace the environment's until it ends.
  void begin_session(const Plan& plan, std::uint64_t seed, bool draw_freedoms);
  void end_session();

  // The end of the run: what is still alive (check_leaks: only when the
  // lock is free), coverage, trace hash; idempotent.
  void finish(bool check_leaks = true) noexcept;

 private:
  State();
  bool finished_ = false;
  bool environment_active_ = false;  // g_active as the environment set it
};

}  // namespace verbfault::interposer
