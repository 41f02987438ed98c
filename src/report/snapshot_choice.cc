#include "report/snapshot_choice.h"

#include <algorithm>
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

namespace {

// shutdown_start() is the snapshot (from 1) where a shutdown that ends at the teardown mark
// `teardown` began freeing: a service that drains what it queued one write at a time frees for
// longer than a second before main returns or exit() is called. It is where what the program holds
// began its fall to the mark, told by its heap blocks (those tracked less those a runtime keeps on
// its free lists: a Python list of tuples cleared at the end sends them there) or, in exact mode,
// by its heap bytes (a vector grown in one buffer and released before main returns frees one
// block), each walked back on its own. A fall counts when it is at least an eighth, or
// kLeastShutdownBlocks blocks (a Python process holds hundreds of thousands of its own), or when it
// stands out of the run's own steps: at least kLeastQuietBlocks or kLeastQuietBytes and eight
// times the median step between the snapshots before it (a script that logged 800 records in
// 2.5 s beside its interpreter's 20 000 blocks, and cleared them as it ended); else the shutdown
// is `teardown` itself. The fall may pause once for a periodic snapshot: a few blocks or kilobytes
// made between it and the next (a log line written while draining, the interpreter's first steps
// of finalizing after an atexit handler cleared a cache and a snapshot fell in between). A
// snapshot the program asked for is never passed over: a test harness takes one after its last
// test, so that what a test's fixture freed before it is not read as a shutdown. In sampled mode
// the table holds one block per recorded allocation, a few hundred, whose count moves by its
// square root from snapshot to snapshot with no shutdown at all: each step of the fall must be
// twice that, the whole fall four times, no pause is passed over, and bytes, estimates, tell
// nothing.
uint32_t shutdown_start(const std::vector<SnapshotMark>& marks, uint32_t teardown, bool sampled) {
  constexpr uint64_t kLeastShutdownBlocks = 1024;
  constexpr uint64_t kLeastQuietBlocks = 64;
  constexpr uint64_t kLeastQuietBytes = 16 << 10;
  constexpr uint32_t kLeastSteps = 4;  // to tell a run's median step
  using Measure = uint64_t (*)(const SnapshotMark&);
  // from() is where the shutdown began as `measure` tells it, or 0 when it tells none.
  auto from = [&](Measure measure, uint64_t least_pause_slack, uint64_t least_fall, uint64_t least_quiet_fall) -> uint32_t {
    auto at = [&](uint32_t snapshot) { return measure(marks[snapshot - 1]); };
    // A step that is part of the shutdown: any fall, or in sampled mode one above twice the noise.
    auto fell_to = [&](uint32_t snapshot) {
      uint64_t before = at(snapshot - 1);
      if (before <= at(snapshot)) return false;
      uint64_t fall = before - at(snapshot);
      return !sampled || fall * fall >= 4 * before;
    };
    auto small_rise = [&](uint32_t snapshot) {
      uint64_t earlier = at(snapshot - 1);
      uint64_t slack = std::max<uint64_t>(least_pause_slack, earlier / 32);
      return marks[snapshot - 2].reason == SnapshotReason::kPeriodic && at(snapshot) <= earlier + slack;
    };
    uint32_t start = teardown;
    bool paused = sampled;  // a sampled count wanders: no pause is told from noise
    while (start > 1 && teardown - start < kShutdownSnapshots) {
      if (fell_to(start)) {
        --start;
      } else if (!paused && small_rise(start)) {
        paused = true;
        --start;
      } else {
        break;
      }
    }
    // The shutdown began where the measure was most: a pause walked over last may have risen to it.
    for (uint32_t later = start + 1; later < teardown; ++later) {
      if (at(later) > at(start)) start = later;
    }
    if (at(start) <= at(teardown)) return 0;
    uint64_t fell = at(start) - at(teardown);
    bool far = fell * 8 >= at(start) || fell >= least_fall;
    if (sampled) return far && fell * fell >= 16 * at(start) ? start : 0;
    if (far) return start;
    if (fell < least_quiet_fall || start <= kLeastSteps) return 0;
    std::vector<uint64_t> steps;
    for (uint32_t snapshot = 2; snapshot <= start; ++snapshot) {
      uint64_t before = at(snapshot - 1), after = at(snapshot);
      steps.push_back(before > after ? before - after : after - before);
    }
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    return fell >= 8 * steps[steps.size() / 2] ? start : 0;
  };
  Measure blocks = [](const SnapshotMark& mark) { return mark.tracked_blocks - std::min(mark.parked_blocks, mark.tracked_blocks); };
  Measure bytes = [](const SnapshotMark& mark) { return mark.host_heap_bytes; };
  if (uint32_t start = from(blocks, 64, kLeastShutdownBlocks, kLeastQuietBlocks)) return start;
  if (sampled) return teardown;
  uint32_t start = from(bytes, 64 << 10, UINT64_MAX, kLeastQuietBytes);
  return start != 0 ? start : teardown;
}

}  // namespace

ChosenSnapshot choose_snapshot(const SnapshotChoice& choice, const std::vector<SnapshotMark>& marks,
                               const std::string& path, uint64_t sample_interval) {
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
        throw SnapshotChoiceError(fmt::format("{}: has {} snapshots; --at {} is beyond them", path, chosen.count, choice.index));
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
        // A program tears down before the mark too: main's locals are destroyed before it returns,
        // and a service shuts its workers down and clears what it kept before it calls exit() or
        // its interpreter finalizes (atexit handlers among it), for as long as it has to drain. A
        // program still freeing as it reached the mark was shutting down: its sites are taken from
        // where the freeing began, or from a snapshot since where they held more. One that had
        // stopped freeing (a test's fixture let go of its buffers, then the run went on) is judged
        // at the mark.
        // High-water snapshots are taken at the top of a rise: where a burst's own free would read as
        // the start of a shutdown. The fall is read from the others.
        // An interpreter's last collection of its garbage, just before the mark, frees reference
        // cycles it had not reached yet: no shutdown of the program's. Its fall is left out: the
        // shutdown is read up to the snapshot taken before it.
        uint32_t program_end = chosen.teardown;
        for (uint32_t i = chosen.teardown - 1; i >= 1 && program_end == chosen.teardown; --i) {
          if (marks[i - 1].reason == SnapshotReason::kBeforeCollection) program_end = i;
        }
        std::vector<SnapshotMark> paced;
        std::vector<uint32_t> index_of;  // paced[i] is marks[index_of[i] - 1]
        for (uint32_t i = 1; i <= program_end; ++i) {
          if (marks[i - 1].reason == SnapshotReason::kHighWater) continue;
          paced.push_back(marks[i - 1]);
          index_of.push_back(i);
        }
        if (program_end < chosen.teardown) chosen.collection = program_end;
        uint32_t shutdown = index_of[shutdown_start(paced, static_cast<uint32_t>(paced.size()), sample_interval != 0) - 1];
        const char* mark = chosen.main_returned ? "main returned" : "teardown begins: exit() or the interpreter's finalization";
        if (shutdown < program_end) {
          chosen.shutdown = shutdown;
          chosen.earlier = chosen.teardown - 1;
          chosen.earliest = shutdown;
          uint64_t half = marks[shutdown - 1].time_ns / 2;
          auto distance = [&](uint32_t at) { return std::max(marks[at - 1].time_ns, half) - std::min(marks[at - 1].time_ns, half); };
          chosen.midway = 1;
          for (uint32_t i = 2; i < shutdown; ++i) {
            if (distance(i) < distance(chosen.midway)) chosen.midway = i;
          }
          chosen.why = fmt::format("{}, after a shutdown that freed what the program held at {:.1f} s; each site at its largest since then, judged as "
                                   "of then",
                                   mark, static_cast<double>(marks[shutdown - 1].time_ns) / 1e9);
        } else {
          chosen.why = mark;
        }
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
