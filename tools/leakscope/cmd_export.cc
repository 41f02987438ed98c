// leakscope export: the judged run in the formats other tools read (pprof, folded stacks), and as
// one HTML page.
#include <fstream>

#include <fmt/format.h>

#include "cli.h"
#include "report/folded_export.h"
#include "report/html_export.h"
#include "report/pprof_export.h"

namespace leakscope::cli {
namespace {

// writable() tells whether `path` can be created or replaced, before the stream is read.
bool writable(const std::string& path) {
  std::ofstream probe(path, std::ios::app);
  return static_cast<bool>(probe);
}

}  // namespace

int export_command(const ExportOptions& options) {
  if (options.pprof.empty() && options.folded.empty() && options.html.empty()) {
    return fail(kUsage, "export needs an output: --pprof OUT.pb.gz, --folded OUT or --html OUT.html");
  }
  report::AnalysisOptions analysis_options;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &analysis_options.at)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  analysis_options.fold = options.fold;
  for (const std::string* path : {&options.pprof, &options.folded, &options.html}) {
    if (!path->empty() && !writable(*path)) return fail(kOutputError, fmt::format("cannot write '{}'", *path));
  }
  try {
    std::unique_ptr<report::RunAnalysis> analysis = report::analyze_run(options.file, analysis_options);
    if (!options.pprof.empty()) report::write_pprof(*analysis, options.pprof);
    if (!options.folded.empty()) {
      std::ofstream folded(options.folded, std::ios::trunc);
      folded << report::folded_stacks(*analysis);
      if (!folded.flush()) return fail(kOutputError, fmt::format("--folded: cannot write '{}'", options.folded));
    }
    if (!options.html.empty()) {
      std::ofstream html(options.html, std::ios::trunc);
      html << report::html_report(*analysis);
      if (!html.flush()) return fail(kOutputError, fmt::format("--html: cannot write '{}'", options.html));
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  } catch (const report::ExportError& error) {
    return fail(kOutputError, error.what());
  }
}

}  // namespace leakscope::cli
