// leakscope dump: the state at one snapshot, symbolized.
#include <cstdio>

#include <fmt/format.h>

#include "cli.h"
#include "report/dump_format.h"
#include "report/run_state.h"
#include "report/symbolizer.h"

namespace leakscope::cli {

int dump_command(const DumpOptions& options) {
  try {
    report::RunState state = report::load_run(options.file, options.at);
    report::Symbolizer symbolizer(state);
    if (options.format == "json") {
      report::write_dump_json(state, symbolizer, stdout);
    } else {
      report::write_dump_text(state, symbolizer, stdout);
    }
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
