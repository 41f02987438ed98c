#include "report/folded_export.h"

#include <algorithm>
#include <unordered_map>

#include "report/flame_names.h"

namespace leakscope::report {
namespace {

struct NamesHash {
  size_t operator()(const std::vector<uint32_t>& names) const {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (uint32_t name : names) hash = (hash ^ name) * 0x100000001b3ull;
    return static_cast<size_t>(hash);
  }
};

}  // namespace

void write_folded_stacks(RunAnalysis& analysis, std::ostream& out) {
  FlameNames names;
  std::unordered_map<std::vector<uint32_t>, int64_t, NamesHash> bytes_by_stack;
  std::vector<uint32_t> stack;
  for (const SiteReport& site : analysis.sites) {
    int64_t bytes = analysis.capture_of(site).live_bytes;
    if (bytes <= 0) continue;
    names.stack(analysis.symbolizer->frames(analysis.stack_of(site)), &stack);
    bytes_by_stack[stack] += bytes;
  }
  std::vector<std::pair<const std::vector<uint32_t>*, int64_t>> sorted;
  sorted.reserve(bytes_by_stack.size());
  for (const auto& [key, bytes] : bytes_by_stack) sorted.emplace_back(&key, bytes);
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    return names.text_less(a.first->data(), a.first->size(), b.first->data(), b.first->size());
  });
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
