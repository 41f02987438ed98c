#include "report/group_keys.h"

#include <functional>

#include <fmt/format.h>

namespace leakscope::report {
namespace {

// frame_identity() is what tells frames apart: the same function at the same line is one frame,
// whichever of its addresses a stack holds.
std::string frame_identity(const SymbolizedFrame& frame) {
  return frame.function.empty() ? fmt::format("{}+{:#x}", frame.module, frame.module_offset)
                                : fmt::format("{}|{}|{}:{}", frame.module, frame.function, frame.file, frame.line);
}

const SymbolizedFrame kNoFrame;

}  // namespace

size_t GroupKeyHash::operator()(const GroupKey& key) const {
  uint64_t packed = (static_cast<uint64_t>(key.first) << 32 | key.second) * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(packed ^ static_cast<uint64_t>(key.kind) ^ (key.driver_layer ? uint64_t{1} << 8 : 0));
}

GroupKeys::GroupKeys(const RunState& state, Symbolizer& symbolizer, const FrameRoles& roles)
    : state_(state), symbolizer_(symbolizer), roles_(roles), identities_(frame_identity) {}

uint32_t GroupKeys::frame_id(const SymbolizedFrame& frame) { return identities_.id(frame) + 1; }

NamedKey GroupKeys::of(uint32_t site) {
  NamedKey named;
  uint32_t stack = state_.sites()[site].stack;
  std::vector<const SymbolizedFrame*> user = symbolizer_.find_frames(
      stack, 2, [this](const std::string& path) { return roles_.is_framework_module(path); },
      [this](const SymbolizedFrame& frame) { return roles_.is_user(frame); });
  if (!user.empty() && FrameRoles::is_generated_python(*user[0])) {
    user = roles_.user_frames(symbolizer_.frames(stack), 2);  // rare: the whole stack decides
  }
  if (!user.empty()) {
    named.has_user_frame = true;
    named.frame = user[0];
    named.caller = user.size() > 1 ? user[1] : nullptr;
    named.key = {GroupKey::Kind::kUser, frame_id(*user[0]), user.size() > 1 ? frame_id(*user[1]) : 0};
  } else if (const SymbolizedFrame* own = outermost_of_own_run(stack)) {
    named.has_user_frame = true;
    named.frame = own;
    named.key = {GroupKey::Kind::kOwn, frame_id(*own), 0};
  } else {
    std::vector<const SymbolizedFrame*> frames = symbolizer_.frames(stack);
    named.frame = frames.empty() ? &kNoFrame : naming_frame(frames);
    named.key = {GroupKey::Kind::kSite, site, 0};
  }
  return named;
}

const SymbolizedFrame* GroupKeys::naming_frame(const std::vector<const SymbolizedFrame*>& frames) {
  if (!frames[0]->function.empty()) return frames[0];
  for (const SymbolizedFrame* frame : frames) {
    if (frame->language == "python") return frame;
  }
  for (const SymbolizedFrame* frame : frames) {
    if (!frame->function.empty()) return frame;
  }
  return frames[0];
}

uint64_t GroupKeys::family_of(const NamedKey& named, uint32_t stream_stack) const {
  uint64_t kind = static_cast<uint64_t>(named.key.kind) + 1;
  if (named.key.kind == GroupKey::Kind::kSite) return (kind << 32 | stream_stack) * 0x9e3779b97f4a7c15ull;
  return std::hash<std::string>()(identities_.name(named.key.first - 1)) ^ kind * 0x9e3779b97f4a7c15ull;
}

uint64_t GroupKeys::identity_of(const GroupKey& key, uint32_t stream_site) const {
  uint64_t kind = static_cast<uint64_t>(key.kind) + 1 + (key.driver_layer ? 8 : 0);
  if (key.kind == GroupKey::Kind::kSite) return (kind << 32 | stream_site) * 0x9e3779b97f4a7c15ull;
  std::hash<std::string> hash;
  uint64_t caller = key.second == 0 ? 0 : hash(identities_.name(key.second - 1)) * 0xc2b2ae3d27d4eb4full;
  return (hash(identities_.name(key.first - 1)) ^ caller) + kind * 0x9e3779b97f4a7c15ull;
}

// outermost_of_own_run() is, in the innermost run of frames in one of the program's modules, the
// first that names a lambda (the task a std::function runs), or else the run's outermost frame;
// null when no frame is in the program's modules.
const SymbolizedFrame* GroupKeys::outermost_of_own_run(uint32_t stack) {
  const SymbolizedFrame* own = nullptr;
  symbolizer_.visit_frames(stack, [&](const SymbolizedFrame& frame) {
    bool framework = roles_.is_framework_module(frame.module);
    if (own != nullptr && (framework || frame.module != own->module)) return false;
    if (framework) return true;
    own = &frame;
    return frame.function.find("{lambda") == std::string::npos;
  });
  return own;
}

}  // namespace leakscope::report
