// File: folded_export.h
//
// The judged run as folded stacks (docs/FORMAT.md), what flamegraph.pl, speedscope and inferno
// read: every live site at the judged snapshot, by its frames' names.
#ifndef LEAKSCOPE_REPORT_FOLDED_EXPORT_H_
#define LEAKSCOPE_REPORT_FOLDED_EXPORT_H_

#include <ostream>

#include "report/analysis.h"
#include "report/frame_names.h"

namespace leakscope::report {

// flame_stack() is `site`'s stack as the ids of the names a flame graph shows, outermost first.
std::vector<uint32_t> flame_stack(RunAnalysis& analysis, const SiteReport& site, FrameNames& names);

// write_folded_stacks() writes one line per distinct stack, `outermost;...;innermost BYTES`, live
// bytes summed over the sites whose frames have the same names, sorted by stack. It holds the
// stacks as name ids, never a line per stack.
void write_folded_stacks(RunAnalysis& analysis, std::ostream& out);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_FOLDED_EXPORT_H_
