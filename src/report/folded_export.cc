#include "report/folded_export.h"

#include <map>

#include <fmt/format.h>

#include "report/frame_roles.h"
#include "report/site_format.h"

namespace leakscope::report {

// ';' separates frames and the last space the count in folded stacks, so neither may stand for
// itself in a name.
std::string flame_frame_name(const SymbolizedFrame& frame) {
  std::string name = function_text(frame, 1000);
  if (frame.language == "python") name += fmt::format(" ({}:{})", module_base_name(frame.file), frame.line);
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\t') c = ' ';
  }
  return name;
}

std::string folded_stacks(RunAnalysis& analysis) {
  std::map<std::string, int64_t> bytes_by_stack;
  for (const SiteReport& site : analysis.sites) {
    if (site.summary.live_bytes <= 0) continue;
    std::vector<SymbolizedFrame> frames = analysis.symbolizer->stack(site.summary.stack);
    std::string stack;
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
      stack += (stack.empty() ? "" : ";") + flame_frame_name(*frame);
    }
    if (stack.empty()) stack = "[no stack]";
    bytes_by_stack[stack] += site.summary.live_bytes;
  }
  std::string out;
  for (const auto& [stack, bytes] : bytes_by_stack) out += fmt::format("{} {}\n", stack, bytes);
  return out;
}

}  // namespace leakscope::report
