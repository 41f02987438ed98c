// File: leak_gate.h
//
// The CI gate: a run's analysis held against limits (leaked bytes, leak rate, peak RSS, growth
// over a baseline report, bytes lost at a leak check), with the runtime's own residue and the
// suppressed groups left out and shown apart. `leakscope check` and `leakscope run --check` print it (gate_format.h).
#ifndef LEAKSCOPE_REPORT_LEAK_GATE_H_
#define LEAKSCOPE_REPORT_LEAK_GATE_H_

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/suppressions.h"

namespace leakscope::report {

struct GateLimits {
  std::optional<int64_t> max_leaked_bytes;      // bytes in leak groups at the judged snapshot
  std::optional<double> max_leak_bytes_per_min;  // their growth, summed
  std::optional<int64_t> max_rss_bytes;         // the largest RSS of any snapshot, less leakscope's own memory
  std::optional<double> max_growth_percent;     // of each leak group over the baseline
  std::optional<int64_t> max_lost_bytes;        // directly and indirectly lost at the leak check, summed

  // any() tells whether a limit was given: with none, the gate is max-leaked=0.
  bool any() const {
    return max_leaked_bytes || max_leak_bytes_per_min || max_rss_bytes || max_growth_percent || max_lost_bytes;
  }
};

// A baseline: an earlier `report --format json`, the live bytes of its leak groups by match key.
struct Baseline {
  std::string path;
  std::string program;  // the file name of the executable it reports on; empty when it does not say
  std::map<std::string, int64_t> leaked_bytes;
  // What each match key lost at its run's leak check, directly and indirectly, whatever the
  // group's verdict; lost_known is false when that run was not leak-checked.
  std::map<std::string, int64_t> lost_bytes;
  bool lost_known = false;
};

// A baseline file that cannot be read, or is not a whole report document.
class BaselineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// load_baseline() reads a report JSON document (version 1) that lists every leak group; throws
// BaselineError.
Baseline load_baseline(const std::string& path);

// group_match_key() names a group across runs and builds: its first user frame's (or innermost
// frame's) function and source file name, without line or address; a frame without a function
// is its module's file name and offset (the same build).
std::string group_match_key(const SymbolizedFrame& frame);

struct GateOptions {
  GateLimits limits;
  const Suppressions* suppressions = nullptr;  // the user's rules, when given
  bool runtime_residue = true;                 // leave out the runtime's own residue
  const Baseline* baseline = nullptr;
  bool lost_not_applicable = false;  // a stream never leak-checked, among streams that are: max-lost is not held
};

// One leak group as the gate saw it.
struct GatedGroup {
  size_t group = 0;  // in RunAnalysis::groups
  std::string name;  // "format_debug_trace (inference_service.cc:84)"
  std::string key;   // group_match_key() of its frame
  int64_t live_bytes = 0;      // what the gate counts: its sites that are neither residue nor suppressed
  int64_t left_out_bytes = 0;  // the rest, shown apart
  double growth_bytes_per_min = 0;  // its growth, in the share of the bytes counted
  double relative_error = 0;  // of a sampled run's estimate of the group's bytes (SampledPrecision); 0 when exact
  int64_t freed_at_exit_bytes = 0;
  const char* freed_when = "at exit";  // when those went (report/analysis.h, freed_when())
  // Of its bytes, those older than anything it freed (older_than_freed_bytes()), when that sets
  // apart a part that turns over; -1 otherwise.
  int64_t older_than_freed_bytes = -1;
  std::string left_out_by;  // why the gate left (some of) it out: runtime residue, a rule
};

// One group holding lost blocks at the leak check, whatever its verdict, as the gate saw it.
struct LostGroup {
  size_t group = 0;  // in RunAnalysis::groups
  std::string name;
  std::string key;   // group_match_key() of its frame
  LostFigures lost;             // what the gate counts: its sites that are neither residue nor suppressed
  uint64_t left_out_bytes = 0;  // lost bytes of the rest
  std::string left_out_by;
};

// lost_places() sums the lost groups of one place, a first user frame whose groups are told apart
// by their callers or verdicts, into one entry each, in the order of `groups`: one bug, one entry.
std::vector<LostGroup> lost_places(const std::vector<LostGroup>& groups);

// A group the run could not judge (its judgement says why: group_judgement()).
struct UnjudgedGroup {
  size_t group = 0;  // in RunAnalysis::groups
  int64_t live_bytes = 0;
};

// How many of the groups it could not judge the gate names.
inline constexpr size_t kUnjudgedNamed = 3;

// One limit held against the run.
struct GateCheck {
  std::string limit;  // "max-leaked"
  bool passed = true;
  std::string text;   // "1.72 MiB leaked in 1 group > 1.00 MiB (largest: ...)"
};

struct GateResult {
  std::vector<GatedGroup> counted;     // leak groups the limits apply to, fastest-growing first
  std::vector<GatedGroup> runtime;     // leak groups that are wholly the runtime's own residue
  std::vector<GatedGroup> suppressed;  // leak groups wholly left out by a rule
  int64_t leaked_bytes = 0;
  double leak_bytes_per_min = 0;
  uint64_t peak_rss_bytes = 0;  // less leakscope's own memory
  // Largest first; read in parts, only the largest kUnjudgedNamed are sure to be here, and these
  // count them all.
  std::vector<UnjudgedGroup> unjudged;
  size_t unjudged_groups = 0;
  int64_t unjudged_bytes = 0;
  bool leak_checked = false;           // the stream has a leak check; the lost figures below are 0 when not
  std::vector<LostGroup> lost;         // groups with lost blocks the limit applies to, most lost bytes first
  std::vector<LostGroup> lost_left_out;  // groups whose lost blocks are wholly residue or suppressed
  LostFigures lost_bytes;              // summed over `lost`
  std::vector<GateCheck> checks;  // one per limit
  bool passed() const;
};

// evaluate_gate() holds `analysis` against `options`. The sites of a leak group that are runtime
// residue or match a rule are left out of it, a group whose every site is, wholly; lost blocks are
// counted in the same way, in groups of any verdict. With no limit given, any leak fails the gate,
// and so do any lost blocks in a leak-checked run. max-lost on a run that was not leak-checked
// fails its check (callers refuse it before: cmd_check.cc).
GateResult evaluate_gate(RunAnalysis& analysis, const GateOptions& options);

// site_left_out() says why a gate of `suppressions` (or none) and `runtime_residue` leaves a site
// out, for a read that sums a group's sites before the gate sees it (AnalysisOptions::gate_left_out).
SiteLeftOut site_left_out(const Suppressions* suppressions, bool runtime_residue);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_LEAK_GATE_H_
