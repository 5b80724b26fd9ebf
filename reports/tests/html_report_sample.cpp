// html_report_sample PATH: writes the sample report's HTML page to PATH,
// for the browser test (browser/test_html_report.py) and for a look by eye.
#include "html_writer.h"
#include "sample_report.h"

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: html_report_sample PATH\n";
    return 2;
  }
  try {
    verbfault::reports::write_html_report(verbfault::reports::testing::sample_report(), argv[1]);
  } catch (const std::exception& error) {
    std::cerr << "html_report_sample: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
