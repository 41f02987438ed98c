#include "report/folded_export.h"

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "core/stream_format.h"
#include "report/frame_roles.h"
#include "report/site_format.h"

namespace leakscope::report {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// without_parameters() is a demangled name without its parameter list: the balanced "(...)" at
// its end, after qualifiers and clone suffixes, with templates and lambdas inside the name kept
// (`Weird::run<main()::<lambda()> >`, `std::vector<(anonymous namespace)::Session*>::push_back`).
std::string without_parameters(std::string name) {
  for (size_t clone; (clone = name.rfind(" [clone ")) != std::string::npos && name.back() == ']';) name.resize(clone);
  for (bool cut = true; cut;) {
    cut = false;
    for (const char* qualifier : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (ends_with(name, qualifier)) {
        name.resize(name.size() - std::strlen(qualifier));
        cut = true;
      }
    }
  }
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return i == 0 ? name : name.substr(0, i);
  }
  return name;
}

}  // namespace

// ';' separates frames and the last space the count in folded stacks, so neither may stand for
// itself in a name.
std::string flame_frame_name(const SymbolizedFrame& frame) {
  std::string name;
  if (internal::is_startup_marker(frame.address)) {
    name = frame.function;  // the marker's text, whole
  } else if (frame.language == "python") {
    name = fmt::format("{} ({}:{})", function_text(frame, 1000), module_base_name(frame.file), frame.line);
  } else {
    name = frame.function.empty() ? function_text(frame, 1000) : without_parameters(frame.function);
  }
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\t') c = ' ';
  }
  return name;
}

std::string folded_stacks(RunAnalysis& analysis) {
  std::map<std::string, int64_t> bytes_by_stack;
  for (const SiteReport& site : analysis.sites) {
    int64_t bytes = analysis.capture_of(site).live_bytes;
    if (bytes <= 0) continue;
    std::vector<const SymbolizedFrame*> frames = analysis.symbolizer->frames(analysis.stack_of(site));
    std::string stack;
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
      stack += (stack.empty() ? "" : ";") + flame_frame_name(**frame);
    }
    if (stack.empty()) stack = "[no stack]";
    bytes_by_stack[stack] += bytes;
  }
  std::string out;
  for (const auto& [stack, bytes] : bytes_by_stack) out += fmt::format("{} {}\n", stack, bytes);
  return out;
}

}  // namespace leakscope::report
