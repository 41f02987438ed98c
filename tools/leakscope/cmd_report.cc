// leakscope report: leak suspects with verdicts, caches and startup residents, memory over time.
#include <cstdio>

#include "cli.h"
#include "report/analysis.h"
#include "report/report_format.h"
#include "report/symbolizer.h"

namespace leakscope::cli {

int report_command(const ReportCommandOptions& options) {
  try {
    report::RunAnalysis analysis = report::analyze_run(options.file, options.at);
    report::Symbolizer symbolizer(analysis.state);
    report::ReportOptions shown;
    shown.top = options.top;
    shown.min_bytes = options.min_bytes;
    shown.fold = options.fold;
    std::string text = options.format == "json" ? report::report_json(analysis, symbolizer, shown).dump(2) + "\n"
                                                : report::report_text(analysis, symbolizer, shown);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
