// File: report_format.h
//
// `leakscope report`: the run's header and memory over time, the peak, then one entry per group
// of sites (the sites that share a first user frame: one bug, one answer): leak suspects ranked by
// growth rate with the numbers behind each verdict and their parts, then caches, startup residents
// and unknown groups briefly, and residency findings. Text fits a 100-column terminal; JSON
// carries every number the text shows, every site and every group (schema in docs/FORMAT.md).
#ifndef LEAKSCOPE_REPORT_REPORT_FORMAT_H_
#define LEAKSCOPE_REPORT_REPORT_FORMAT_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "report/analysis.h"

namespace leakscope::report {

struct ReportOptions {
  size_t top = 10;        // groups (and, in JSON, sites) per section
  int64_t min_bytes = 0;  // groups and sites with fewer live bytes are left out
  int frames = 0;         // frames per stack in text; 0: 6 for leak suspects, 1 for the others
  std::string fold;       // framework frames to fold (FrameFolder), e.g. "torch,python"
};

// report_json() is the JSON document; write_report_json() writes the same text json_text() would
// make of it, with its groups and sites each made as it is written, never all held at once.
nlohmann::json report_json(const RunAnalysis& analysis, const ReportOptions& options);
void write_report_json(const RunAnalysis& analysis, const ReportOptions& options, std::FILE* out);
std::string report_text(const RunAnalysis& analysis, const ReportOptions& options);

// sparkline() draws `values` in `width` columns of ▁..█ scaled to [0, scale].
std::string sparkline(const std::vector<double>& values, size_t width, double scale);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_REPORT_FORMAT_H_
