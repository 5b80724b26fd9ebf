#include "hang_watch.h"

#include <charconv>
#include <stdexcept>

namespace verbfault::checkers {

std::uint64_t parse_hang_after(const std::string& text, const std::string& source) {
  // Digits, with at most one '.' among them: no sign, no exponent, no
  // spaces (as the seeds and the other numbers of the environment).
  const std::size_t dot = text.find('.');
  const bool well_formed =
      !text.empty() && text.size() <= 16 &&
      text.find_first_not_of("0123456789.") == std::string::npos &&
      (dot == std::string::npos || text.find('.', dot + 1) == std::string::npos) && text != "." &&
      text.front() != '.' && text.back() != '.';
  // from_chars, not strtod: the program's locale may read "0.5" otherwise.
  double seconds = -1;
  if (well_formed) std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (!well_formed || seconds < 0 || seconds > 86400)
    throw std::runtime_error(source + "='" + text +
                             "': expected seconds without progress before a hung run is ended, "
                             "a number 0..86400 (0: no hang watchdog)");
  return static_cast<std::uint64_t>(seconds * 1e9);
}

bool HangWatch::hung(const HangLook& look) {
  if (after_ns_ == 0) return false;
  // A thread out of sight may have been doing what ends the wait: the
  // quiet stretch starts again at the next look that sees every thread.
  if (!look.in_sight) {
    started_ = false;
    return false;
  }
  if (!started_ || look.progress != progress_) {
    started_ = true;
    progress_ = look.progress;
    since_ns_ = look.wall_ns;
    return false;
  }
  return look.wall_ns - since_ns_ >= after_ns_;
}

}  // namespace verbfault::checkers
