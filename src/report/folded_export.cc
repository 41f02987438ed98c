#include "report/folded_export.h"

#include <algorithm>
#include <unordered_map>

#include "report/frame_names.h"

namespace leakscope::report {

std::vector<uint32_t> flame_stack(RunAnalysis& analysis, const SiteReport& site, FrameNames& names) {
  std::vector<const SymbolizedFrame*> frames = analysis.symbolizer->frames(analysis.stack_of(site));
  std::vector<uint32_t> stack;
  stack.reserve(frames.size());
  for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) stack.push_back(names.id(**frame));
  return stack;
}

void write_folded_stacks(RunAnalysis& analysis, std::ostream& out) {
  FrameNames names(flame_frame_name);
  std::unordered_map<std::vector<uint32_t>, int64_t, StackHash> bytes_by_stack;
  for (const SiteReport& site : analysis.sites) {
    int64_t bytes = analysis.own_live_bytes(site);
    if (bytes > 0) bytes_by_stack[flame_stack(analysis, site, names)] += bytes;
  }
  std::vector<std::pair<const std::vector<uint32_t>*, int64_t>> sorted;
  sorted.reserve(bytes_by_stack.size());
  for (const auto& [key, bytes] : bytes_by_stack) sorted.emplace_back(&key, bytes);
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) { return names.text_less(*a.first, *b.first, ';'); });
  for (const auto& [key, bytes] : sorted) {
    if (key->empty()) out << "[no stack]";
    for (size_t i = 0; i < key->size(); ++i) {
      if (i != 0) out << ';';
      out << names.name((*key)[i]);
    }
    out << ' ' << bytes << '\n';
  }
}

}  // namespace leakscope::report
