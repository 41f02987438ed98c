// File: diff_format.h
//
// `leakscope diff A B`: what changed between two runs, per site. Sites are matched across runs by
// their signature (domain and, per frame, its function, or its module and offset when unknown),
// since addresses move between runs; signatures are held as ids of interned names. Each row says whether the site appeared, vanished, grew, shrank or stayed, with live bytes
// before and after, and its verdict in each run.
#ifndef LEAKSCOPE_REPORT_DIFF_FORMAT_H_
#define LEAKSCOPE_REPORT_DIFF_FORMAT_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/analysis.h"
#include "report/symbolizer.h"

namespace leakscope::report {

struct DiffRow {
  std::string status;  // appeared, vanished, grew, shrank, unchanged
  Domain domain = Domain::kHeap;
  int64_t before_bytes = 0, after_bytes = 0, before_blocks = 0, after_blocks = 0;
  std::optional<Verdict> before_verdict, after_verdict;
  size_t shown = 0;  // the site whose frames represent the row, in the sites of after, else of before
  bool from_after = true;
};

// diff_rows() pairs the sites live at each run's judged snapshot, largest change first.
std::vector<DiffRow> diff_rows(const RunAnalysis& before, const RunAnalysis& after);

nlohmann::json diff_json(const RunAnalysis& before, const RunAnalysis& after, size_t top);
std::string diff_text(const RunAnalysis& before, const RunAnalysis& after, size_t top);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DIFF_FORMAT_H_
