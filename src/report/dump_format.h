// File: dump_format.h
//
// `leakscope dump`: the state at one snapshot, as JSON (shape in docs/FORMAT.md, stable: scripts
// and CI read it) or as text for a terminal.
#ifndef LEAKSCOPE_REPORT_DUMP_FORMAT_H_
#define LEAKSCOPE_REPORT_DUMP_FORMAT_H_

#include <cstdio>

#include "report/judged_state.h"
#include "report/site_format.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// Both write site by site, each site's summary made as it is written, so that a dump of a process
// with a million sites never holds them all.

// write_dump_json() writes the dump document of the `judged` sites to `out`; `left_out` sites with
// live blocks were left out of them (--top, --min-bytes).
void write_dump_json(const RunHeader& header, const JudgedSites& judged, size_t left_out, Symbolizer& symbolizer,
                     std::FILE* out);

// write_dump_text() writes the same content for a terminal, at most `max_frames` frames per site.
void write_dump_text(const RunHeader& header, const JudgedSites& judged, size_t left_out, Symbolizer& symbolizer,
                     std::FILE* out, int max_frames = 8);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DUMP_FORMAT_H_
