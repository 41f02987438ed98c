// File: snapshot_choice.h
//
// Which snapshot `dump`, `report` and `diff` show and judge (--at), with one meaning for all:
//   (default)  the run before teardown, so that what a clean shutdown frees cannot hide a leak:
//              the snapshot marking where exit() was called, the interpreter began finalizing or
//              main returned; as main's own locals are gone by its return, and a service clears
//              what it kept as it shuts down before it exits, a program still freeing as it
//              reached the mark (the heap blocks or bytes it holds fell steadily into it) has
//              each site taken from where that shutdown began or a snapshot since, where it held
//              most, and judged as of the shutdown's start (report/judged_state.h); otherwise sites are as
//              at the mark; the final snapshot when the stream has no teardown mark (a
//              fatal signal, _exit, exec, or killed);
//   N          the N-th snapshot, counting from 1;
//   end        the final snapshot, after teardown.
// docs/cli.md and docs/ANALYSIS.md describe it for users.
#ifndef LEAKSCOPE_REPORT_SNAPSHOT_CHOICE_H_
#define LEAKSCOPE_REPORT_SNAPSHOT_CHOICE_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/stream_reader.h"

namespace leakscope::report {

// An --at that names no snapshot of the stream: a wrong argument, not a damaged stream.
class SnapshotChoiceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SnapshotChoice {
  enum class Kind { kBeforeTeardown, kIndex, kEnd };
  Kind kind = Kind::kBeforeTeardown;
  uint32_t index = 0;  // kIndex: from 1
};

// parse_snapshot_choice() reads "N" (N >= 1) or "end"; false for anything else.
bool parse_snapshot_choice(const std::string& text, SnapshotChoice* choice);

// The snapshot chosen in one stream, and what the stream says of how it ended.
// How far back before a teardown mark a shutdown is looked for (snapshot_choice.cc).
constexpr uint32_t kShutdownSnapshots = 64;

struct ChosenSnapshot {
  uint32_t index = 0;     // from 1; 0 when the stream has no snapshot
  uint32_t earlier = 0;   // a teardown mark's predecessor, whose larger sites are merged in
  uint32_t earliest = 0;  // with the snapshots from this one to `earlier`: those of the shutdown before the mark
  uint32_t count = 0;     // snapshots in the stream
  uint32_t teardown = 0;  // index of the teardown mark; 0 when there is none
  uint32_t shutdown = 0;  // where a shutdown that frees up to the mark began (shutdown_start()); 0: none
  uint32_t midway = 0;    // with a shutdown: the snapshot nearest half its start's time (judged_state.h)
  // The snapshot before an interpreter's last collection of its garbage, just before the mark;
  // 0 when there is none (judged_state.h).
  uint32_t collection = 0;
  bool main_returned = false;  // the judged mark is main's return (not exit() or finalization)
  std::string why;        // how it was chosen: "where teardown begins: ...", "as --at asks", ...
  SnapshotMark last{};    // the stream's last snapshot, for "ended by"
};

// choose_snapshot() resolves `choice` against the snapshots `marks` lists (skim_snapshots()) of
// the stream at `path`, recorded with sample option `sample_interval` (0: exact mode). Throws
// SnapshotChoiceError naming `path` when --at N is beyond the stream.
ChosenSnapshot choose_snapshot(const SnapshotChoice& choice, const std::vector<SnapshotMark>& marks,
                               const std::string& path, uint64_t sample_interval = 0);

// ended_by() says how the stream ended: "exit", "signal N", "_exit", "exec", or "running or
// killed" when its last snapshot is not a final one (JSON `ended_by`).
std::string ended_by(const SnapshotMark& last);

// ended_by_text() is the same for a person: "ended by exit", ..., or "no final snapshot (killed,
// or still running)".
std::string ended_by_text(const SnapshotMark& last);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SNAPSHOT_CHOICE_H_
