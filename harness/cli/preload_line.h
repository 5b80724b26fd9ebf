// The LD_PRELOAD a run gives the programs it starts: the harness library
// ahead of what the user preloads already. In a sanitized build
// (VERBFAULT_SANITIZE) libverbfault.so is built with AddressSanitizer, and
// ASan's runtime refuses to start unless it is the first library of the
// process ("ASan runtime does not come first in initial library list"): in
// an unmodified program (ibv_rc_pingpong, python3) it comes first only when
// preloaded first, so this build puts it at the front.
#pragma once

#include <string>

namespace verbfault::cli {

// `library`, then `inherited` (the caller's LD_PRELOAD; null or empty when
// none), separated by ':' as ld.so(8) reads the list; in a sanitized build
// the sanitizer runtime found at configure time first of all.
std::string preload_line(const std::string& library, const char* inherited);

}  // namespace verbfault::cli
