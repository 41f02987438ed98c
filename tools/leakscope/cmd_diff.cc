// leakscope diff: what changed between two runs, per site.
#include <cstdio>

#include "cli.h"
#include "report/analysis.h"
#include "report/diff_format.h"
#include "report/json_text.h"

namespace leakscope::cli {

int diff_command(const DiffOptions& options) {
  report::AnalysisOptions analysis_options;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &analysis_options.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  try {
    std::unique_ptr<report::RunAnalysis> before = report::analyze_run(options.before, analysis_options);
    std::unique_ptr<report::RunAnalysis> after = report::analyze_run(options.after, analysis_options);
    std::string text = options.format == "json" ? report::json_text(report::diff_json(*before, *after, options.top)) + "\n"
                                                : report::diff_text(*before, *after, options.top);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
