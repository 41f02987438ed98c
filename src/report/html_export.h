// File: html_export.h
//
// The judged run as one self-contained HTML file (no network, no external script): a flame graph
// of live bytes by stack, coloured by how much of each frame's bytes leak; RSS and tracked bytes
// over time with the largest groups' series; the groups' verdicts and figures in a table.
#ifndef LEAKSCOPE_REPORT_HTML_EXPORT_H_
#define LEAKSCOPE_REPORT_HTML_EXPORT_H_

#include <ostream>
#include <string>

#include "report/analysis.h"

namespace leakscope::report {

// write_html_report() writes the page. The flame graph keeps the frames holding at least 1/2000 of the live
// bytes (the rest stay in their caller's figure); the chart and the table show the `top` groups
// by the report's order (leaks first).
void write_html_report(RunAnalysis& analysis, std::ostream& out, size_t top = 20);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_HTML_EXPORT_H_
