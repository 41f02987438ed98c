// File: leak_check.h
//
// What a reachability scan found (LEAK_CHECK, docs/FORMAT.md), as dump, report and check show it:
// each site's lost bytes and blocks beside its live ones, and the scan's own figures. A run that
// was not scanned has every figure 0 and says so (`"scanned": false`). docs/ANALYSIS.md, "Lost
// blocks at exit", says how they sit beside the verdicts.
#ifndef LEAKSCOPE_REPORT_LEAK_CHECK_H_
#define LEAKSCOPE_REPORT_LEAK_CHECK_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "report/run_state.h"

namespace leakscope::report {

// Lost blocks of a site, a group or a run. Unsigned: a damaged stream's figures wrap, they never
// overflow.
struct LostFigures {
  uint64_t bytes = 0, blocks = 0;                    // directly lost: no pointer to them from anywhere
  uint64_t indirect_bytes = 0, indirect_blocks = 0;  // pointed to only from lost blocks

  uint64_t total_bytes() const { return bytes + indirect_bytes; }
  uint64_t total_blocks() const { return blocks + indirect_blocks; }
  bool any() const { return total_blocks() != 0 || total_bytes() != 0; }
  LostFigures& operator+=(const LostFigures& other);
};

// lost_by_site() sums the last scan's figures of each site over its triples: the sites that lost
// blocks; empty when the stream has no scan.
std::unordered_map<uint32_t, LostFigures> lost_by_site(const RunState& state);

// lost_in() is what the whole scan found lost.
LostFigures lost_in(const LeakCheck& check);

// leak_check_trigger_name() is "teardown", "request", "signal", or "unknown" for a trigger this
// reader does not know.
const char* leak_check_trigger_name(internal::LeakCheckTrigger trigger);

// add_lost_json() sets a JSON site's or group's lost_bytes, lost_blocks, indirectly_lost_bytes
// and indirectly_lost_blocks.
void add_lost_json(const LostFigures& lost, nlohmann::json* entry);

// leak_check_json() is the documents' "leak_check" object: {"scanned": false} when the stream has
// no scan, else the last scan's figures and what it found lost in all.
nlohmann::json leak_check_json(const RunState& state);

// lost_blocks_text() is "1,337 B in 1 block".
std::string lost_blocks_text(uint64_t bytes, uint64_t blocks);

// lost_text() is "directly lost 1,337 B in 1 block, indirectly lost 2,048 B in 2 blocks" (each
// part only when not 0); "" when nothing was lost.
std::string lost_text(const LostFigures& lost);

// leak_check_text() is the header lines of a scanned run: what started the scan, how long the
// program was stopped, what was scanned and lost, and a warning line when threads could not be
// stopped.
std::string leak_check_text(const LeakCheck& check);

// unscanned_mappings_note() is a note line when the scan lost blocks but left out the `mapped_bytes`
// the program mapped itself (an mmap'd table, an arena), which may be all that points to them; an
// empty string otherwise.
std::string unscanned_mappings_note(const LeakCheck& check, int64_t mapped_bytes);

// leak_check_when() is when a scan ran, as a lost block's text ends: "at exit" for the teardown
// mark's, else "at the leak check at 5.2 s".
std::string leak_check_when(const LeakCheck& check);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_LEAK_CHECK_H_
