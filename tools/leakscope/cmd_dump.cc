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
    std::string text = options.format == "json" ? report::dump_json(state, symbolizer).dump(2) + "\n"
                                                : report::dump_text(state, symbolizer);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kOk;
  } catch (const report::StreamError& error) {
    return fail(kBadInput, error.what());
  }
}

}  // namespace leakscope::cli
