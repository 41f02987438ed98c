// File: folded_export.h
//
// The judged run as folded stacks (docs/FORMAT.md), what flamegraph.pl, speedscope and inferno
// read: every live site at the judged snapshot, by its frames' names.
#ifndef LEAKSCOPE_REPORT_FOLDED_EXPORT_H_
#define LEAKSCOPE_REPORT_FOLDED_EXPORT_H_

#include <string>

#include "report/analysis.h"

namespace leakscope::report {

// flame_frame_name() is what a flame graph shows for a frame: the function without its parameters
// (a Python frame with its file and line, as py-spy names them), with no ';' or line break.
std::string flame_frame_name(const SymbolizedFrame& frame);

// folded_stacks() is one line per distinct stack, `outermost;...;innermost BYTES`, live bytes
// summed over the sites whose frames have the same names, sorted by stack.
std::string folded_stacks(RunAnalysis& analysis);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_FOLDED_EXPORT_H_
