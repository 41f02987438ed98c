// leakscope report: leak suspects with verdicts, caches and startup residents, memory over time.
#include <cstdio>

#include "cli.h"
#include "report/analysis.h"
#include "report/report_format.h"

namespace leakscope::cli {

int report_command(const ReportCommandOptions& options) {
  report::AnalysisOptions analysis_options;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &analysis_options.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  analysis_options.fold = options.fold;
  analysis_options.site_memory = options.site_memory;
  analysis_options.top = options.top;
  analysis_options.min_bytes = options.min_bytes;
  try {
    std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(options.file, analysis_options);
    report::ReportOptions shown;
    shown.top = options.top;
    shown.min_bytes = options.min_bytes;
    shown.frames = options.frames;
    shown.fold = options.fold;
    if (options.format == "json") {
      report::write_report_json(*analysis, shown, stdout);
      std::fputs("\n", stdout);
    } else {
      std::string text = report::report_text(*analysis, shown);
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
