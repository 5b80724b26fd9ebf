// Replaces the fast-path ops of a context with the interposer's
// trampolines (the provider's own are saved first: saved_ops.h).
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::interposer {

void install_trampolines(ibv_context* context);
// Into every context opened so far (a Session switching the harness on).
void install_all_trampolines();

}  // namespace verbfault::interposer
