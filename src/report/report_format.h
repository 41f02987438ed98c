// File: report_format.h
//
// `leakscope report`: the run's header and memory over time, then leak suspects ranked by growth
// rate with the numbers behind each verdict, then caches, startup residents and unknown sites
// briefly, and residency findings. Text fits a 100-column terminal; JSON carries every number the
// text shows (schema in docs/FORMAT.md).
#ifndef LEAKSCOPE_REPORT_REPORT_FORMAT_H_
#define LEAKSCOPE_REPORT_REPORT_FORMAT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "report/analysis.h"
#include "report/symbolizer.h"

namespace leakscope::report {

struct ReportOptions {
  size_t top = 10;        // sites per section
  int64_t min_bytes = 0;  // sites with fewer live bytes are left out
  int frames = 6;         // frames per leak suspect in text
  std::string fold;       // framework frames to fold (FrameFolder), e.g. "torch,python"
};

nlohmann::json report_json(const RunAnalysis& analysis, Symbolizer& symbolizer, const ReportOptions& options);
std::string report_text(const RunAnalysis& analysis, Symbolizer& symbolizer, const ReportOptions& options);

// sparkline() draws `values` in `width` columns of ▁..█ scaled to [0, scale].
std::string sparkline(const std::vector<double>& values, size_t width, double scale);

// site_analysis_json() adds the verdict fields to a site's JSON entry.
nlohmann::json site_analysis_json(const SiteReport& site, Symbolizer& symbolizer, const FrameFolder& folder);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_REPORT_FORMAT_H_
