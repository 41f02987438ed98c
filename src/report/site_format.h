// File: site_format.h
//
// How a site, its frames and the run's header are written, shared by dump, report and diff so
// that the same thing always reads the same (docs/FORMAT.md).
#ifndef LEAKSCOPE_REPORT_SITE_FORMAT_H_
#define LEAKSCOPE_REPORT_SITE_FORMAT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "report/run_state.h"
#include "report/site_summary.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// ended_by() is "exit", "signal N" or "running or killed".
std::string ended_by(const SnapshotInfo& snapshot);

// run_header_json() holds the fields every JSON document starts with (version, process,
// snapshots, duration, memory, live bytes by domain).
nlohmann::json run_header_json(const RunState& state);

// site_json() is one entry of "sites": domain, live bytes and blocks, frames (folded by `folder`),
// threads, tasks.
nlohmann::json site_json(const SiteSummary& site, Symbolizer& symbolizer, const FrameFolder& folder = FrameFolder(""));

// frame_text() is "function (file:line) [module]", the function shortened to `width` columns.
std::string frame_text(const SymbolizedFrame& frame, size_t width = 1000);

// owners_text() is "threads: a (tid 1) 2 MiB, ... · tasks: request 2 MiB".
std::string owners_text(const SiteSummary& site);

// site_signature() identifies a site across runs: its domain and, per frame, the function (or
// module and offset when unknown).
std::string site_signature(const SiteSummary& site, Symbolizer& symbolizer);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SITE_FORMAT_H_
