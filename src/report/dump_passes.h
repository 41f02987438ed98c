// File: dump_passes.h
//
// What `leakscope dump` shows of a stream, read in as many passes as keep the sites it holds in
// memory at once within a budget. A stream of a stack-heavy process holds hundreds of thousands of
// sites, each a few hundred bytes while it is read (its stack, triples, counters, births and
// capture); a dump of its largest few need not hold them all. With --top, a pass that finds more
// sites than the budget allows ends its count of the stream's stacks, and the stream is then read
// once per part, each part keeping the sites of the stacks a hash gives it
// (RunState::keep_sites_of()); of each part only its largest sites are kept, symbolized, until the
// next. What is program-wide (the header's figures, the leak check's totals) is the same in every
// pass, and the sites shown and their order are those of a single pass.
#ifndef LEAKSCOPE_REPORT_DUMP_PASSES_H_
#define LEAKSCOPE_REPORT_DUMP_PASSES_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/judged_state.h"
#include "report/leak_check.h"
#include "report/run_state.h"
#include "report/site_summary.h"
#include "report/snapshot_choice.h"
#include "report/symbolizer.h"

namespace leakscope::report {

// About what one site costs while a stream is read for a dump (measured: 400 000 sites of distinct
// stacks take 320 bytes each above what any dump takes).
constexpr uint64_t kDumpBytesPerSite = 400;
// A stream is read in at most this many parts: a budget smaller than its share of the sites is
// raised to it, so that a tiny one costs a few seconds, not one read per stack.
constexpr uint64_t kMaxDumpParts = 32;

struct DumpSelection {
  size_t top = 0;         // 0: every site (read in one pass: they are all written)
  int64_t min_bytes = 0;  // sites with fewer live bytes are left out
  std::string task;       // only the sites holding bytes of this task
  uint64_t site_memory = 0;  // for the sites held at once; 0: no limit
};

// One site as a dump writes it: its summary (its id the stream's), its frames, what it lost.
struct DumpSite {
  SiteSummary summary;
  std::vector<SymbolizedFrame> frames;
  LostFigures lost;
};

// The sites a dump writes, largest first, made one at a time: false once there are no more.
using NextDumpSite = std::function<bool(DumpSite*)>;

class DumpRead {
 public:
  // Reads the stream of `reader` (which chose `at` from its snapshots, and warns of what it found
  // damaged then) up to the snapshot `at` for the sites `selection` asks for; a later pass reads
  // `reader` again from its start (the file it opened, whatever its name now holds). Throws
  // StreamError.
  DumpRead(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection);
  ~DumpRead();

  // The last pass's state: its definitions, the process, the snapshots and the leak check; its
  // sites are only those of the last part.
  const RunState& state() const { return state_; }
  const SnapshotInfo& shown() const { return shown_; }
  // Live bytes per domain of every site live at the shown snapshot, in every part.
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain() const { return by_domain_; }
  const std::vector<DeviceMemory>& devices() const { return devices_; }
  size_t passes() const { return passes_; }
  size_t shown_count() const;  // sites written
  size_t left_out() const { return left_out_; }
  // sites() makes the sites to write, in order; call once.
  NextDumpSite sites();

 private:
  void read_parts(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection, uint32_t parts);
  // read_pass() reads the stream of `reader` into a fresh state_ keeping the sites `keep` chooses
  // (all when null) and takes its judged sites, largest first, of `selection`; what it leaves out
  // counts in left_out_. Only the first pass warns.
  JudgedSites read_pass(StreamReader& reader, const ChosenSnapshot& at, const DumpSelection& selection,
                        std::function<bool(uint32_t)> keep);
  // keep_shown() adds the `judged` sites of the pass just read to kept_, summarized and symbolized.
  void keep_shown(const JudgedSites& judged);
  DumpSite site_of(const CapturedSite& captured, const SiteCaptures& captures, Symbolizer& symbolizer,
                   const std::unordered_map<uint32_t, LostFigures>& lost) const;

  RunState state_;
  SnapshotInfo shown_;
  std::array<int64_t, internal::kDomainCount> by_domain_{};
  std::vector<DeviceMemory> devices_;
  size_t passes_ = 0;
  size_t left_out_ = 0;
  // Every site (no --top): the judged sites of one pass, symbolized as they are written (through
  // symbolizer_, null otherwise). Else the sites kept of every pass.
  JudgedSites whole_;
  std::unique_ptr<Symbolizer> symbolizer_;
  // With --top: one symbolizer for every part, rebound to each, so that the modules' debug
  // information is read once.
  std::unique_ptr<Symbolizer> parts_symbolizer_;
  std::vector<DumpSite> kept_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_DUMP_PASSES_H_
