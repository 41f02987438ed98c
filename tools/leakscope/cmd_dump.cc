// leakscope dump: the state at one snapshot, symbolized.
#include <cstdio>

#include "cli.h"
#include "report/dump_format.h"
#include "report/dump_passes.h"
#include "report/snapshot_choice.h"

namespace leakscope::cli {

int dump_command(const DumpOptions& options) {
  report::SnapshotChoice choice;
  if (!options.at.empty() && !report::parse_snapshot_choice(options.at, &choice)) {
    return fail(kUsage, "--at: not a snapshot number or 'end': " + options.at);
  }
  try {
    report::StreamReader reader(options.file);
    report::ChosenSnapshot at = report::choose_snapshot(choice, reader.skim_snapshots(), options.file,
                                                             report::sample_interval_of(options.file));
    report::DumpRead read(reader, at,
                          report::DumpSelection{options.top, options.min_bytes, options.task, options.site_memory});
    report::RunHeader header{read.state(), at, read.shown(), read.live_bytes_by_domain(), read.devices()};
    if (options.format == "json") {
      report::write_dump_json(header, read.left_out(), read.sites(), stdout);
    } else {
      report::write_dump_text(header, read.shown_count(), read.left_out(), read.sites(), stdout, options.frames);
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
