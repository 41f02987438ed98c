#include "report/frame_names.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/stream_format.h"
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

std::string signature_frame_name(const SymbolizedFrame& frame) {
  return frame.function.empty() ? fmt::format("{}+{:#x}", module_base_name(frame.module), frame.module_offset) : frame.function;
}

uint32_t FrameNames::intern(std::string name) {
  auto [named, added] = ids_by_name_.emplace(std::move(name), static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(&named->first);
  return named->second;
}

uint32_t FrameNames::id(const SymbolizedFrame& frame) {
  auto found = ids_by_frame_.find(&frame);
  if (found == ids_by_frame_.end()) found = ids_by_frame_.emplace(&frame, intern(name_of_(frame))).first;
  return found->second;
}

bool FrameNames::text_less(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, char separator) const {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;  // one id, one name
    const std::string& x = name(a[i]);
    const std::string& y = name(b[i]);
    size_t common = std::min(x.size(), y.size());
    int order = std::memcmp(x.data(), y.data(), common);
    if (order != 0) return order < 0;
    // One name begins the other: the shorter one's text goes on with the separator, or ends there.
    auto after = [](const std::string& text, size_t at) { return static_cast<unsigned char>(text[at]); };
    if (x.size() < y.size()) return i + 1 == a.size() || static_cast<unsigned char>(separator) < after(y, common);
    return i + 1 != b.size() && after(x, common) < static_cast<unsigned char>(separator);
  }
  return a.size() < b.size();
}

}  // namespace leakscope::report
