#include "report/snapshot_choice.h"

#include <cstdlib>

#include <fmt/format.h>

namespace leakscope::report {

using internal::SnapshotReason;

bool parse_snapshot_choice(const std::string& text, SnapshotChoice* choice) {
  if (text == "end") {
    choice->kind = SnapshotChoice::Kind::kEnd;
    return true;
  }
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  uint32_t index = static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 10));
  if (index == 0) return false;
  choice->kind = SnapshotChoice::Kind::kIndex;
  choice->index = index;
  return true;
}

ChosenSnapshot choose_snapshot(const SnapshotChoice& choice, const std::vector<SnapshotMark>& marks,
                               const std::string& path) {
  ChosenSnapshot chosen;
  chosen.count = static_cast<uint32_t>(marks.size());
  for (size_t i = 0; i < marks.size(); ++i) {
    if (marks[i].reason == SnapshotReason::kTeardown || marks[i].reason == SnapshotReason::kMainReturned) {
      chosen.teardown = static_cast<uint32_t>(i + 1);
      break;
    }
  }
  if (!marks.empty()) chosen.last = marks.back();
  switch (choice.kind) {
    case SnapshotChoice::Kind::kIndex:
      if (choice.index > chosen.count) {
        throw StreamError(fmt::format("{}: has {} snapshots; --at {} is beyond them", path, chosen.count, choice.index));
      }
      chosen.index = choice.index;
      chosen.why = "as --at asks";
      break;
    case SnapshotChoice::Kind::kEnd:
      chosen.index = chosen.count;
      chosen.why = "the final snapshot, as --at end asks";
      break;
    case SnapshotChoice::Kind::kBeforeTeardown:
      if (chosen.teardown != 0) {
        chosen.index = chosen.teardown;
        chosen.main_returned = marks[chosen.teardown - 1].reason == SnapshotReason::kMainReturned;
        chosen.earlier = chosen.teardown - 1;
        // A program tears down before the mark too: main's locals are destroyed before it returns,
        // and a service shuts its workers down and clears what it kept before it calls exit() or
        // its interpreter finalizes (atexit handlers among it). A snapshot may land meanwhile: the
        // snapshots of the second before the mark are all looked at.
        chosen.earliest = chosen.earlier;
        uint64_t mark_ns = marks[chosen.teardown - 1].time_ns;
        while (chosen.earliest > 1 && marks[chosen.earliest - 2].time_ns + kTeardownWindowNs >= mark_ns) --chosen.earliest;
        const char* mark = chosen.main_returned ? "main returned" : "teardown begins: exit() or the interpreter's finalization";
        chosen.why = chosen.earlier != 0 ? fmt::format("{}; each site as of then or at its largest in the second before", mark)
                                         : mark;
      } else {
        chosen.index = chosen.count;
        chosen.why = chosen.last.final || chosen.last.reason == SnapshotReason::kExec
                         ? "the final snapshot: no teardown ran"
                         : "the last snapshot: the stream ends without a final one";
      }
      break;
  }
  return chosen;
}

std::string ended_by(const SnapshotMark& last) {
  if (last.reason == SnapshotReason::kExec) return "exec";
  if (!last.final) return "running or killed";
  switch (last.reason) {
    case SnapshotReason::kSignal: return fmt::format("signal {}", last.signal_number);
    case SnapshotReason::kUnderscoreExit: return "_exit";
    case SnapshotReason::kQuickExit: return "quick_exit";
    default: return "exit";
  }
}

std::string ended_by_text(const SnapshotMark& last) {
  std::string how = ended_by(last);
  return how == "running or killed" ? "no final snapshot (killed, or still running)" : "ended by " + how;
}

}  // namespace leakscope::report
