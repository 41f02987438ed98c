// File: group_sums.h
//
// What the sites of a group add up to, for a group of more sites than a part of a read in parts
// may hold (report/report_passes.h: one function registering every operator of a registry keeps
// hundreds of thousands of sites under one name). Such a group's sites are spread over several
// reads, each adding what it holds of them: counts, live bytes over time, live bytes by birth, the
// owners' shares, and a small record of every site for its order and the JSON's list of parts.
// The group is then judged on the sums as a single read judges it on its sites, and a report holds
// only its largest sites whole (kPartsShown), taking the rest from here.
#ifndef LEAKSCOPE_REPORT_GROUP_SUMS_H_
#define LEAKSCOPE_REPORT_GROUP_SUMS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/analysis.h"

namespace leakscope::report {

// One site of a summed group: what orders it among the group's parts and what the JSON lists.
struct SummedPart {
  uint32_t site = 0;   // the stream's
  uint32_t stack = 0;  // the stream's
  Domain domain = Domain::kHeap;
  Verdict verdict = Verdict::kUnknown;  // its own judgement's
  double growth_bytes_per_min = 0;
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
  PrecisionSum precision;  // its own, summed in the parts' order as a single read sums them
};

// part_before() is the order of a group's parts in a single read: largest first, then as the
// report ranks sites, then by the stream's id.
bool part_before(const SummedPart& a, const SummedPart& b);
// ranked_before() is the order sites take in a single read: as the report ranks them, then by the
// stream's id.
bool ranked_before(const SummedPart& a, const SummedPart& b);

struct GroupSums {
  uint64_t family = 0;
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
  uint64_t allocations = 0;
  uint64_t temporary_allocations = 0;
  int64_t freed_at_exit_bytes = 0;
  int64_t inner_bytes = 0;
  double first_seen_s = std::numeric_limits<double>::infinity();
  std::vector<SeriesPoint> series;      // the sites' and those of its key gone by the judged snapshot
  std::map<double, int64_t> births;     // live bytes by birth time
  StartupPhase made_during = StartupPhase::kNone;
  PrecisionSum precision;  // summed by judge_sums()
  PartAges ages;
  bool all_residue = true;   // every site is the runtime's own residue
  bool all_reserve = true;   // every site is a caching allocator's reserve
  const char* largest_runtime = nullptr;  // the runtime residue of the largest site
  bool largest_free_list = false;         // the largest site is the interpreter's free lists
  bool over_budget_site = false;          // the largest site stands for stacks over leakscope's memory budget
  bool gone = false;                      // gone sites of its key add to its series
  SummedPart largest;                     // its largest site
  SummedPart first_ranked;                // its first site as sites rank: its place among groups that rank alike
  bool cut_at_depth = false;              // as the first-ranked site's stack says
  bool user_keyed = false;                // GroupReport::user_keyed
  bool named_by_caller = false;           // another group shares its first user frame
  std::map<uint32_t, ThreadShare> threads;  // by thread index
  std::map<std::string, TaskShare> tasks;
  OwnedBytes owned;  // what its growth is shared out by, when a leak (owner_sums())
  // What the gate leaves out of it (GateOptions), when the read was asked to tell.
  int64_t gated_bytes = 0;
  int64_t left_out_bytes = 0;
  std::string left_out_by;  // why, for its largest site left out
  SummedPart left_out_part;
  std::vector<SummedPart> parts;  // every site; in part_before() order once judged
  size_t sites() const { return parts.size(); }
  SiteJudgement judgement;  // made by judge_sums()
  SiteEvidence evidence(double now_s, uint32_t epochs) const;
};

// add_to_sums() adds the groups of `analysis`, a read that holds only sites of groups summed (and
// all of their gone sites it has), to `sums`. `stream_stack` names a kept stack as the stream
// does; `family` gives a stream stack's family; `left_out` is the gate's reason to leave a site
// out ("" when it counts), or null.
void add_to_sums(RunAnalysis& analysis, const std::function<uint32_t(uint32_t)>& stream_stack,
                 const std::function<uint64_t(uint32_t)>& family, const SiteLeftOut& left_out, SummedGroups* sums);

// judge_sums() judges every summed group once all reads have added to it, and orders its parts.
void judge_sums(const RunAnalysis& any_read, SummedGroups* sums);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_GROUP_SUMS_H_
