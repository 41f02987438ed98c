// File: dump_format.h
//
// `leakscope dump`: the state at one snapshot, as JSON (shape in docs/FORMAT.md, stable: scripts
// and CI read it) or as text for a terminal.
#ifndef LEAKSCOPE_REPORT_DUMP_FORMAT_H_
#define LEAKSCOPE_REPORT_DUMP_FORMAT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "report/run_state.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// dump_json() returns the dump document for the state's current snapshot.
nlohmann::json dump_json(const RunState& state, Symbolizer& symbolizer);

// dump_text() renders the same content for a terminal, at most `max_frames` frames per site.
std::string dump_text(const RunState& state, Symbolizer& symbolizer, int max_frames = 8);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DUMP_FORMAT_H_
