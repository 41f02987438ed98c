// leakscope diff: what changed between two runs, per site.
#include <cstdio>

#include "cli.h"
#include "report/analysis.h"
#include "report/diff_format.h"
#include "report/symbolizer.h"

namespace leakscope::cli {

int diff_command(const DiffOptions& options) {
  try {
    report::RunAnalysis before = report::analyze_run(options.before);
    report::RunAnalysis after = report::analyze_run(options.after);
    report::Symbolizer before_symbols(before.state), after_symbols(after.state);
    report::AnalyzedRun old_run{before, before_symbols}, new_run{after, after_symbols};
    std::string text = options.format == "json" ? report::diff_json(old_run, new_run, options.top).dump(2) + "\n"
                                                : report::diff_text(old_run, new_run, options.top);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
