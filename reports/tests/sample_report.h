// A small conformance report built in code, for the writers' tests and the
// browser test's page (html_report_sample): a baseline and three fault
// classes over seeds 1..3, with a crash, a finding, a hang, an entry whose
// fault never fired, a timeline with every kind of mark, and text that
// tries to break out of its markup (<, &, quotes, "</script>").
#pragma once

#include "report.h"

namespace verbfault::reports::testing {

Report sample_report();

}  // namespace verbfault::reports::testing
