// File: group_keys.h
//
// What makes sites one group, and what names it to a person (docs/ANALYSIS.md, "Groups: one bug, one entry"): their
// first user frame and the user frame that called it (a helper shared by a bounded cache and an
// unbounded one is two groups); without a user frame by function, a frame of the innermost run of
// frames in the program's own modules (a lambda's std::function invoker in a binary without debug
// info); failing that, the innermost frame, and the site is a group of its own. Frames are told
// apart by what they name (module, function, file and line; or module and offset), each interned
// once to a small id, so a key is three integers however many sites there are, and nothing is kept
// per site.
#ifndef LEAKSCOPE_REPORT_GROUP_KEYS_H_
#define LEAKSCOPE_REPORT_GROUP_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "report/frame_names.h"
#include "report/frame_roles.h"
#include "report/run_state.h"
#include "report/symbolizer.h"

namespace leakscope::report {

struct GroupKey {
  enum class Kind : uint8_t { kUser, kOwn, kSite };
  Kind kind = Kind::kSite;
  uint32_t first = 0;   // kUser, kOwn: the naming frame's id; kSite: the site's id
  uint32_t second = 0;  // kUser: the id of the user frame that called it; 0 when there is none
  // Memory the driver hands out is a layer beneath the program's objects: never one group with
  // them (device_layers.h).
  bool driver_layer = false;
  bool operator==(const GroupKey& other) const = default;
};

struct GroupKeyHash {
  size_t operator()(const GroupKey& key) const;
};

// A site's key and the frame that names its group.
struct NamedKey {
  GroupKey key;
  bool has_user_frame = false;
  const SymbolizedFrame* frame = nullptr;  // the symbolizer's; never null (an empty frame for an empty stack)
  const SymbolizedFrame* caller = nullptr;  // kUser: the user frame that called it, if any
};

class GroupKeys {
 public:
  GroupKeys(const RunState& state, Symbolizer& symbolizer, const FrameRoles& roles);

  // of() is the key of site `site`, read from its stack through the symbolizer's cache of frames.
  NamedKey of(uint32_t site);

  // family_of() is a hash of what `named` shares with every key of the same naming frame (the
  // groups that frame's callers tell apart), the same in any read of the stream: the name of that
  // frame, or for a site grouped alone, its stack's id in the stream (`stream_stack`).
  uint64_t family_of(const NamedKey& named, uint32_t stream_stack) const;

  // identity_of() is a hash of `key` the same in any read of the stream: of the names of its frames,
  // or for a site grouped alone, of its site's id in the stream (`stream_site`).
  uint64_t identity_of(const GroupKey& key, uint32_t stream_site) const;

 private:
  uint32_t frame_id(const SymbolizedFrame& frame);  // from 1: 0 is no frame
  // naming_frame() names a site grouped alone: its innermost frame, or where that has no name (an
  // address in a stripped interpreter), the innermost Python frame, else the innermost named one.
  static const SymbolizedFrame* naming_frame(const std::vector<const SymbolizedFrame*>& frames);
  const SymbolizedFrame* outermost_of_own_run(uint32_t stack);

  const RunState& state_;
  Symbolizer& symbolizer_;
  const FrameRoles& roles_;
  FrameNames identities_;
};

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_GROUP_KEYS_H_
