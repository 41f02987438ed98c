// File: dump_format.h
//
// `leakscope dump`: the state at one snapshot, as JSON (shape in docs/FORMAT.md, stable: scripts
// and CI read it) or as text for a terminal.
#ifndef LEAKSCOPE_REPORT_DUMP_FORMAT_H_
#define LEAKSCOPE_REPORT_DUMP_FORMAT_H_

#include <cstdio>

#include "report/dump_passes.h"
#include "report/site_format.h"

namespace leakscope::report {

// Both write site by site, as `next` makes them (report/dump_passes.h), so that a dump of a
// process with a million sites never holds them all.

// write_dump_json() writes the dump document of the sites `next` makes to `out`; `left_out` sites
// with live blocks were left out of them (--top, --min-bytes).
void write_dump_json(const RunHeader& header, size_t left_out, const NextDumpSite& next, std::FILE* out);

// write_dump_text() writes the same content for a terminal, at most `max_frames` frames per site;
// `shown` is how many sites `next` makes.
void write_dump_text(const RunHeader& header, size_t shown, size_t left_out, const NextDumpSite& next, std::FILE* out,
                     int max_frames = 8);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DUMP_FORMAT_H_
