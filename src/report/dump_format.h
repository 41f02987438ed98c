// File: dump_format.h
//
// `leakscope dump`: the state at one snapshot, as JSON (shape in docs/FORMAT.md, stable: scripts
// and CI read it) or as text for a terminal.
#ifndef LEAKSCOPE_REPORT_DUMP_FORMAT_H_
#define LEAKSCOPE_REPORT_DUMP_FORMAT_H_

#include <cstdio>

#include "report/run_state.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// Both write site by site, so that a dump of a process with a million sites never holds them all.

// write_dump_json() writes the dump document for the state's current snapshot to `out`.
void write_dump_json(const RunState& state, Symbolizer& symbolizer, std::FILE* out);

// write_dump_text() writes the same content for a terminal, at most `max_frames` frames per site.
void write_dump_text(const RunState& state, Symbolizer& symbolizer, std::FILE* out, int max_frames = 8);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DUMP_FORMAT_H_
