// F09 (mercury-hpc/mercury issue 154): finalize hung inside
// ibv_get_cq_event during endpoint destroy.
//
//   field_failure_F09 buggy|fixed
//
// A progress thread runs the completion event loop; the worker posts
// writes and waits for their completions. At teardown the worker sets the
// stop flag and joins the progress thread. If the progress thread looked at
// the flag before it was set, it is asleep in ibv_get_cq_event with no
// completion coming: the buggy shutdown, a flag alone, leaves the join
// waiting for a thread that waits for an event. The fixed shutdown also
// posts a wake-up write, whose completion raises the event the progress
// thread wakes up with (progress_thread.h). Found when the progress thread
// runs ahead of the worker after the last completion: the seed decides.
#include "progress_thread.h"

namespace {

void f09(bool fixed) {
  field_failures::run(fixed, field_failures::careful_loop, {.bursts = 4, .size = 1},
                      /*wake_up=*/fixed);
}

}  // namespace

int main(int argc, char** argv) {
  return field_failures::run_variant(argc, argv, f09);
}
