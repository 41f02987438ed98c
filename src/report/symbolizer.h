// File: symbolizer.h
//
// Turns return addresses into function, file:line and module, offline, from the module map in the
// stream; an address inside inlined code becomes one frame per inlined function, innermost first,
// each at its own file:line (DWARF inlined-subroutine scopes and their call sites): each module's file is opened with libdw at the load address it had in the traced
// process, and its build-id is checked against the one recorded, so a module whose file is gone
// or was rebuilt is named as such instead of misread. Each module is opened once and each address
// resolved once.
#ifndef LEAKSCOPE_REPORT_SYMBOLIZER_H_
#define LEAKSCOPE_REPORT_SYMBOLIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/run_state.h"

namespace leakscope::report {

struct SymbolizedFrame {
  uint64_t address = 0;        // return address in the traced process
  uint64_t module_offset = 0;  // address - module base
  std::string function;        // demangled; empty when unknown
  std::string file;            // empty without debug info
  int line = 0;
  std::string module;          // module path, with " (missing)" or " (changed)" when unusable
  std::string language;        // "python" for a Python frame; empty for native code
  bool inlined = false;        // inlined into the frame that follows it
  int folded = 0;              // > 0: stands for this many framework frames (FrameFolder)
};

// inside_debug_library() is true while libdw works for a Symbolizer: where an allocation of its
// own fails, libdw asserts or exits instead of returning an error, so that a process ending there
// ran out of memory (tools/leakscope says so with its exit code) rather than met a fault.
bool inside_debug_library();

class Symbolizer {
 public:
  explicit Symbolizer(const RunState& state);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // rebind() has it read stacks from `state`, another read of the same stream (the same modules,
  // the same interpreted code) whose stacks may be numbered otherwise (RunState::keep_sites_of()):
  // what it read of each module's debug information stays, the frames it made go, and pointers to
  // them with them.
  void rebind(const RunState& state);

  // frames() symbolizes stack `id` (innermost first) with leading allocator entry points
  // (operator new and friends) removed, so frames[0] is the program's own code. Frames are cached
  // per address, stacks are not: a dump of a million stacks must not hold them all. The pointers
  // are into that cache, whose frames never move: they stay valid while the symbolizer lives.
  std::vector<const SymbolizedFrame*> frames(uint32_t id);

  // stack() is frames() copied.
  std::vector<SymbolizedFrame> stack(uint32_t id);

  // find_frames() walks stack `id` from the innermost frame outwards and returns the first `count`
  // frames `accept` takes (fewer when the stack has fewer), as frames() does; addresses in modules
  // whose path `skip_module` takes are passed over without reading their debug info (the cheap way
  // to skip a framework's frames).
  std::vector<const SymbolizedFrame*> find_frames(uint32_t id, size_t count,
                                                  const std::function<bool(const std::string&)>& skip_module,
                                                  const std::function<bool(const SymbolizedFrame&)>& accept);

  // visit_frames() calls `visit` with each frame of stack `id`, innermost first (allocator entry
  // points included), until it returns false; nothing is copied, and each frame is the cached one.
  void visit_frames(uint32_t id, const std::function<bool(const SymbolizedFrame&)>& visit);

  // runs_python_function() tells whether stack `id` holds a Python frame of `function` in a file
  // whose name begins with `file_prefix`; native frames are not symbolized for it.
  bool runs_python_function(uint32_t id, const std::string& function, const std::string& file_prefix) const;

 private:
  struct ModuleDebug;
  const std::vector<SymbolizedFrame>& symbolize(uint64_t address, uint32_t epoch);
  SymbolizedFrame interpreted_frame(uint64_t address) const;
  const Module* module_for(uint64_t address, uint32_t epoch) const;
  ModuleDebug& debug_for(const Module& module);

  // The modules' segments by address, for module_for(); rebuilt when modules were added.
  struct SegmentEntry {
    uint64_t begin, end;
    uint32_t module;      // index in state_.modules()
    uint64_t max_end;     // the largest end of this entry and all before it
  };
  void index_segments() const;

  const RunState* state_;
  mutable std::vector<SegmentEntry> segments_;
  mutable size_t segments_modules_ = 0;
  std::vector<std::unique_ptr<ModuleDebug>> debug_;
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> frames_;  // by address and module
};

// is_allocator_entry() tells whether a function is an allocation entry point that callers of
// malloc see above the program: operator new in all its forms, and the standard allocator's
// allocate() that wraps it (usually inlined into the container that called it).
bool is_allocator_entry(const std::string& function);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_SYMBOLIZER_H_
