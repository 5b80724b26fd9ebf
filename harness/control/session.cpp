// verbfault/session.h: a plan and seed set around the code under test.
#include "verbfault/session.h"

#include "replay.h"
#include "run.h"

#include <stdexcept>

namespace verbfault {

Session::Session(Plan plan, std::uint64_t seed, Freedoms freedoms)
    : plan_(std::move(plan)), seed_(seed), freedoms_(freedoms) {
  for (const Rule& rule : plan_.rules) validate(rule, "Session");
  interposer::process_run().begin_session(plan_, seed_, freedoms == Freedoms::drawn);
}

Session::~Session() {
  interposer::process_run().end_session();
}

std::vector<std::string> Session::trace() const {
  auto& run = interposer::process_run();
  std::lock_guard lock(run.mutex);
  run.trace.flush_idle();
  return run.trace.captured();
}

std::uint64_t Session::trace_hash() const {
  auto& run = interposer::process_run();
  std::lock_guard lock(run.mutex);
  run.trace.flush_idle();
  return run.trace.hash();
}

std::vector<std::uint64_t> Session::fired() const {
  auto& run = interposer::process_run();
  std::lock_guard lock(run.mutex);
  return run.engine.fired();
}

std::vector<Finding> Session::findings() const {
  auto& run = interposer::process_run();
  std::lock_guard lock(run.mutex);
  return run.checkers.findings();
}

void Session::report_outcome(const ibv_qp* qp, std::uint64_t wr_id, bool success) {
  auto& run = interposer::process_run();
  std::lock_guard lock(run.mutex);
  if (interposer::Tracked* tracked = run.registry.find(qp))
    run.checkers.outcome_reported(run, *tracked, wr_id, success);
}

std::string Session::reproduce() const {
  // The environment's settings, but this session's freedoms.
  std::vector<engine::Setting> settings;
  for (engine::Setting& setting : engine::replay_settings())
    if (setting.first != "VERBFAULT_FREEDOMS") settings.push_back(std::move(setting));
  if (freedoms_ == Freedoms::canonical) settings.emplace_back("VERBFAULT_FREEDOMS", "canonical");
  return engine::environment_line({seed_, {}, plan_.rules, std::move(settings), {}, {}});
}

}  // namespace verbfault
