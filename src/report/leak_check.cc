#include "report/leak_check.h"

#include <fmt/format.h>

#include "report/text_layout.h"
#include "report/units.h"

namespace leakscope::report {

using internal::LeakCheckTrigger;

namespace {

LostFigures figures_of(const TripleLoss& loss) {
  return {loss.lost_bytes, loss.lost_blocks, loss.indirectly_lost_bytes, loss.indirectly_lost_blocks};
}

}  // namespace

LostFigures& LostFigures::operator+=(const LostFigures& other) {
  bytes += other.bytes;
  blocks += other.blocks;
  indirect_bytes += other.indirect_bytes;
  indirect_blocks += other.indirect_blocks;
  return *this;
}

std::unordered_map<uint32_t, LostFigures> lost_by_site(const RunState& state) {
  std::unordered_map<uint32_t, LostFigures> by_site;
  if (!state.leak_check()) return by_site;
  for (const TripleLoss& loss : state.leak_check()->triples) by_site[state.triples()[loss.triple].site] += figures_of(loss);
  return by_site;
}

LostFigures lost_in(const LeakCheck& check) {
  LostFigures total;
  for (const TripleLoss& loss : check.triples) total += figures_of(loss);
  total += figures_of(check.not_kept);
  return total;
}

const char* leak_check_trigger_name(LeakCheckTrigger trigger) {
  switch (trigger) {
    case LeakCheckTrigger::kTeardown: return "teardown";
    case LeakCheckTrigger::kRequest: return "request";
    case LeakCheckTrigger::kSignal: return "signal";
  }
  return "unknown";
}

void add_lost_json(const LostFigures& lost, nlohmann::json* entry) {
  (*entry)["lost_bytes"] = lost.bytes;
  (*entry)["lost_blocks"] = lost.blocks;
  (*entry)["indirectly_lost_bytes"] = lost.indirect_bytes;
  (*entry)["indirectly_lost_blocks"] = lost.indirect_blocks;
}

nlohmann::json leak_check_json(const RunState& state) {
  if (!state.leak_check()) return {{"scanned", false}};
  const LeakCheck& check = *state.leak_check();
  nlohmann::json json = {{"scanned", true},
                         {"trigger", leak_check_trigger_name(check.trigger)},
                         {"snapshot", check.snapshot},
                         {"time_s", static_cast<double>(check.time_ns) / 1e9},
                         {"stopped_ms", static_cast<double>(check.stopped_ns) / 1e6},
                         {"threads_stopped", check.threads_stopped},
                         {"threads_missed", check.threads_missed},
                         {"blocks", check.blocks},
                         {"bytes", check.bytes},
                         {"root_bytes", check.root_bytes},
                         {"memory_bytes", check.memory_bytes},
                         {"mmap_roots", (check.flags & internal::kLeakCheckMmapRoots) != 0}};
  add_lost_json(lost_in(check), &json);
  return json;
}

std::string lost_blocks_text(uint64_t bytes, uint64_t blocks) {
  return fmt::format("{} in {} block{}", format_exact_bytes(bytes), blocks, blocks == 1 ? "" : "s");
}

std::string lost_text(const LostFigures& lost) {
  std::string text;
  if (lost.bytes != 0 || lost.blocks != 0) text = "directly lost " + lost_blocks_text(lost.bytes, lost.blocks);
  if (lost.indirect_bytes != 0 || lost.indirect_blocks != 0) {
    text += (text.empty() ? "" : ", ") + std::string("indirectly lost ") + lost_blocks_text(lost.indirect_bytes, lost.indirect_blocks);
  }
  return text;
}

std::string leak_check_text(const LeakCheck& check) {
  std::string trigger;
  switch (check.trigger) {
    case LeakCheckTrigger::kTeardown: trigger = "at the teardown mark"; break;
    case LeakCheckTrigger::kRequest: trigger = "on request (leakscope_leak_check())"; break;
    case LeakCheckTrigger::kSignal: trigger = "on leak_check_signal"; break;
    default: trigger = fmt::format("(trigger {})", static_cast<uint32_t>(check.trigger)); break;
  }
  std::string lost = lost_text(lost_in(check));
  std::string text = fmt::format(
      "leak check {} at {}: {} thread{} stopped for {:.1f} ms; {} live block{} ({}) scanned from {} of roots{}; {}", trigger,
      format_seconds(check.time_ns), check.threads_stopped, check.threads_stopped == 1 ? "" : "s",
      static_cast<double>(check.stopped_ns) / 1e6, check.blocks, check.blocks == 1 ? "" : "s",
      format_bytes(static_cast<int64_t>(check.bytes)),
      format_bytes(static_cast<int64_t>(check.root_bytes)),
      (check.flags & internal::kLeakCheckMmapRoots) != 0 ? " (the program's anonymous mappings among them)" : "",
      lost.empty() ? "nothing lost" : lost);
  std::string out = wrap(text, "   ", "");
  if (check.threads_missed != 0) {
    bool one = check.threads_missed == 1;
    out += wrap(fmt::format("warning: {} thread{} could not be stopped in time: {} registers were not scanned, nor {} "
                            "unless waiting in a system call, so blocks only {} to may show as lost",
                            check.threads_missed, one ? "" : "s", one ? "its" : "their", one ? "its stack" : "their stacks",
                            one ? "it points" : "they point"),
                "   ", "");
  }
  return out;
}

std::string unscanned_mappings_note(const LeakCheck& check, int64_t mapped_bytes) {
  LostFigures lost = lost_in(check);
  bool lost_any = lost.bytes != 0 || lost.blocks != 0 || lost.indirect_bytes != 0 || lost.indirect_blocks != 0;
  if (!lost_any || mapped_bytes <= 0 || (check.flags & internal::kLeakCheckMmapRoots) != 0) return "";
  return wrap(fmt::format("note: the {} the program mapped itself were not scanned: blocks pointed to only from there (an "
                          "mmap'd table, an arena) count as lost; --option leak_check_mmap=1 scans them, or register them "
                          "with leakscope_register_root_region()",
                          format_bytes(mapped_bytes)),
              "   ", "");
}

std::string leak_check_when(const LeakCheck& check) {
  if (check.trigger == LeakCheckTrigger::kTeardown) return "at exit";
  return "at the leak check at " + format_seconds(check.time_ns);
}

}  // namespace leakscope::report
