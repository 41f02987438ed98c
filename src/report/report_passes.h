// File: report_passes.h
//
// The analysis of a stream whose sites do not fit in memory at once (AnalysisOptions::site_memory),
// read in parts that each hold whole groups, so that every group is judged on all its parts as a
// single read judges it. What makes sites one group is their naming frame, known only once their
// stacks are symbolized: a first round of reads, each keeping a share of the stacks, gives each
// stack its family of groups (GroupKeys::family_of(): 8 bytes a stack); a second round reads the
// families part by part and keeps of each part only the groups and sites a report can show (the
// top of each section, of each verdict for the JSON, the peaks' largest holders) and what it
// counts of the whole (each section's and verdict's groups and sites, the owners, what teardown
// freed); a last read takes the families of those kept, whole. A family of more sites than a part
// holds (one function registering every operator of a registry) is read first, in shares of its
// stacks, its groups summed over the reads (report/group_sums.h), and the last read takes only the
// largest sites of those kept; so are the largest of the families kept when together they have
// more sites than a part holds. A report of the result, text or JSON, prints what a report of one
// read prints. A stream whose sites fit is read once, and so is one that holds a leak check (its
// findings name places across groups).
#ifndef LEAKSCOPE_REPORT_REPORT_PASSES_H_
#define LEAKSCOPE_REPORT_REPORT_PASSES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "report/analysis.h"

namespace leakscope::report {

// About what one site costs while a stream is analyzed (measured: 262 144 sites of distinct stacks
// take 131 MiB, the process's whole peak).
constexpr uint64_t kReportBytesPerSite = 512;
// A stream is read in at most this many parts: a budget smaller than its share of the sites is
// raised to it.
constexpr uint64_t kMaxReportParts = 32;

// analyze_in_parts() is analyze_run() within options.site_memory, judged at `at` (chosen from
// `marks`). Throws StreamError.
std::unique_ptr<RunAnalysis> analyze_in_parts(StreamReader& reader, const ChosenSnapshot& at, const std::vector<SnapshotMark>& marks,
                                              const AnalysisOptions& options);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_REPORT_PASSES_H_
