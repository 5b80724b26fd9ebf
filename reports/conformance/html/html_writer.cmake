# The self-contained HTML writer (conformance/html_writer.h), included from
# reports/CMakeLists.txt so that the generated source belongs to the
# directory of verbfault_reports (a custom command's output is only built
# for targets of its own directory). report.css and report.js are compiled
# into the library: the page needs no file beside it and makes no request.
set(VERBFAULT_HTML_ASSETS_CPP ${CMAKE_CURRENT_BINARY_DIR}/conformance/html_assets.cpp)
add_custom_command(
  OUTPUT ${VERBFAULT_HTML_ASSETS_CPP}
  COMMAND ${CMAKE_COMMAND} -DCSS=${CMAKE_CURRENT_LIST_DIR}/report.css
          -DJS=${CMAKE_CURRENT_LIST_DIR}/report.js -DOUT=${VERBFAULT_HTML_ASSETS_CPP}
          -P ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/report.css ${CMAKE_CURRENT_LIST_DIR}/report.js
          ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  COMMENT "Embedding the HTML report's CSS and JS"
  VERBATIM)
target_sources(verbfault_reports PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/conformance/script_json.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/conformance/html_matrix.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/conformance/html_report_data.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/conformance/html_writer.cpp
  ${VERBFAULT_HTML_ASSETS_CPP})
