#include "report/flame_names.h"

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

uint32_t FlameNames::intern(std::string name) {
  auto [found, inserted] = ids_by_name_.emplace(std::move(name), static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(found->first);
  return found->second;
}

void FlameNames::stack(const std::vector<const SymbolizedFrame*>& frames, std::vector<uint32_t>* names) {
  names->clear();
  for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
    auto found = ids_by_frame_.find(*frame);
    if (found == ids_by_frame_.end()) found = ids_by_frame_.emplace(*frame, intern(flame_frame_name(**frame))).first;
    names->push_back(found->second);
  }
}

bool FlameNames::text_less(const uint32_t* a, size_t a_size, const uint32_t* b, size_t b_size) const {
  for (size_t i = 0; i < a_size && i < b_size; ++i) {
    if (a[i] == b[i]) continue;  // one id, one name
    const std::string& x = names_[a[i]];
    const std::string& y = names_[b[i]];
    size_t common = std::min(x.size(), y.size());
    int order = std::memcmp(x.data(), y.data(), common);
    if (order != 0) return order < 0;
    // One name begins the other: the shorter one's text goes on with ';', or ends there.
    if (x.size() < y.size()) return i + 1 == a_size || ';' < static_cast<unsigned char>(y[common]);
    return i + 1 != b_size && static_cast<unsigned char>(x[common]) < ';';
  }
  return a_size < b_size;
}

}  // namespace leakscope::report
