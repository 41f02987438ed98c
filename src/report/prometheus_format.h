// File: prometheus_format.h
//
// The judged run as Prometheus metrics (the text exposition format, version 0.0.4): per group,
// live bytes, leak rate and leak entropy labelled by function, domain and verdict; per process,
// RSS, tracked bytes by domain and leakscope's own memory; per device (with device tracking), its
// tracked bytes by domain, the caching allocator's cache and the driver's figures. `leakscope serve` and `run
// --prometheus` serve it on /metrics (docs/FORMAT.md).
#ifndef LEAKSCOPE_REPORT_PROMETHEUS_FORMAT_H_
#define LEAKSCOPE_REPORT_PROMETHEUS_FORMAT_H_

#include <string>
#include <utility>
#include <vector>

#include "report/analysis.h"

namespace leakscope::report {

struct MetricsOptions {
  size_t top = 20;  // groups with series of their own (in the report's order: leaks first)
  std::vector<std::pair<std::string, std::string>> labels;  // on every series: a fleet is told apart
};

// valid_label_name() tells a Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting "__".
bool valid_label_name(const std::string& name);

// prometheus_metrics() is the exposition text. The groups beyond `top` are summed into one series
// per verdict with function="(other)", so the totals stay whole and the cardinality bounded.
std::string prometheus_metrics(RunAnalysis& analysis, const MetricsOptions& options);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_PROMETHEUS_FORMAT_H_
