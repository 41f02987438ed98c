// leakscope dump: the state at one snapshot, symbolized.
#include <algorithm>
#include <cstdio>

#include "cli.h"
#include "report/dump_format.h"
#include "report/judged_state.h"
#include "report/run_state.h"
#include "report/snapshot_choice.h"
#include "report/symbolizer.h"

namespace leakscope::cli {
namespace {

// keep_largest() keeps the sites holding at least `min_bytes` (and, with `task`, some bytes of
// that task) and, when `top` is not 0, only the `top` holding the most (the sites come largest
// first).
void keep_largest(report::JudgedSites* judged, size_t top, int64_t min_bytes, const std::string& task) {
  std::erase_if(judged->sites, [&](const report::CapturedSite& site) {
    if (site.live_bytes < min_bytes) return true;
    if (task.empty()) return false;
    bool holds = false;
    judged->captures.for_each_task(site, [&](const std::string& name, int64_t bytes, int64_t) {
      holds = holds || (name == task && bytes > 0);
    });
    return !holds;
  });
  if (top != 0 && judged->sites.size() > top) judged->sites.resize(top);
}

}  // namespace

int dump_command(const DumpOptions& options) {
  report::SnapshotChoice choice;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &choice)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  try {
    report::StreamReader reader(options.file);
    report::ChosenSnapshot at = report::choose_snapshot(choice, reader.skim_snapshots(), options.file,
                                                             report::sample_interval_of(options.file));
    report::RunState state;
    report::JudgedCapture capture(at);
    report::read_run(reader, at.index, &state, [&capture](const report::RunState& read) { capture.observe(read); });
    report::JudgedSites judged = capture.take_sites();
    size_t all_sites = judged.sites.size();
    keep_largest(&judged, options.top, options.min_bytes, options.task);
    size_t left_out = all_sites - judged.sites.size();
    report::Symbolizer symbolizer(state);
    report::RunHeader header{state, at, capture.info(), capture.live_bytes_by_domain(), capture.devices()};
    if (options.format == "json") {
      report::write_dump_json(header, judged, left_out, symbolizer, stdout);
    } else {
      report::write_dump_text(header, judged, left_out, symbolizer, stdout, options.frames);
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
