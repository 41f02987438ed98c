#include "python/python_frames.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

#include <atomic>

#include "core/interpreter.h"
#include "core/stack_capture.h"
#include "core/startup_phase.h"
#include "core/stream_format.h"
#include "core/types.h"
#include "python/python_code_table.h"
#include "python/python_layout.h"
#include "python/python_objects.h"

namespace leakscope::internal {
namespace {

// Python frames read per stack.
constexpr int kMaxPythonFrames = 128;
// A frame chain longer than this is taken to be corrupt.
constexpr int kMaxChainSteps = 4096;

using ThreadStateGetter = uintptr_t (*)();

struct Walker {
  PythonLayout layout;
  PythonTypes types;
  ThreadStateGetter gil_state;      // this thread's own state in the main interpreter
  ThreadStateGetter current_state;  // the state running Python (3.10/3.11: the GIL holder's)
  uintptr_t eval_begin, eval_end;                // _PyEval_EvalFrameDefault
  uintptr_t interpreter_begin, interpreter_end;  // the executable segment of the module holding it
};

Walker g_walker;
std::atomic<bool> g_active{false};

// What a walk found: the frames, innermost first, cut into the runs that one
// _PyEval_EvalFrameDefault call evaluates (a run may be empty: a call whose frame has not begun).
struct PythonStack {
  struct Frame {
    uint32_t code_id;
    uint32_t offset;
  };
  Frame frames[kMaxPythonFrames];
  int frame_count = 0;
  int call_ends[kMaxPythonFrames];  // call i holds frames [call_ends[i-1], call_ends[i])
  int call_count = 0;
  int outermost_import = -1;  // the outermost frame of the import machinery, when importing
  uintptr_t import_frame = 0, import_code = 0;  // that frame's address and code object
  bool cut = false;  // the chain was longer than what is read of it
  bool own = false;  // read from this thread's own state, not the running one (GIL released)

  void end_call() {
    if (call_count < kMaxPythonFrames) call_ends[call_count++] = frame_count;
  }
  int call_begin(int call) const { return call == 0 ? 0 : call_ends[call - 1]; }
};

int find_segment(struct dl_phdr_info* info, size_t, void* data) {
  auto* walker = static_cast<Walker*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
    uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    uintptr_t end = begin + header.p_memsz;
    if (walker->eval_begin >= begin && walker->eval_begin < end) {
      walker->interpreter_begin = begin;
      walker->interpreter_end = end;
      return 1;
    }
  }
  return 0;
}

// instruction_offset() is the byte offset of the instruction `frame` runs in `code`; negative for
// a frame that has not begun (3.11+ point just before the first instruction then).
int64_t instruction_offset(const PythonLayout& layout, uintptr_t frame, uintptr_t code) {
  if (layout.instruction_is_index) {
    int32_t index = read_field<int32_t>(frame, layout.frame_instruction);
    return index > 0 ? int64_t{index} * 2 : 0;  // -1: not begun, which 3.10 reads as the first line
  }
  uintptr_t instruction = read_field<uintptr_t>(frame, layout.frame_instruction);
  return static_cast<int64_t>(instruction - (code + layout.code_bytecode));
}

// thread_state() is the state of the Python code running on this thread, or 0: the current
// state when this thread holds the GIL (in a subinterpreter, that interpreter's), else this
// thread's own (a torch op releases the GIL around the work that allocates); `own` says which.
uintptr_t thread_state(const Walker& w, bool* own) {
  unsigned long self = pthread_self();
  uintptr_t current = w.current_state();
  *own = false;
  if (current != 0 && read_field<unsigned long>(current, w.layout.tstate_thread_id) == self) return current;
  uintptr_t mine = w.gil_state();
  *own = true;
  return mine != 0 && read_field<unsigned long>(mine, w.layout.tstate_thread_id) == self ? mine : 0;
}

// Where this thread's outermost import frame was at its last walk (0: it was not importing). An
// import runs for a long while under the same outermost frame, allocating at every step: a walk
// that finds that frame again passes over the frames inward of it (WalkScope).
struct ImportHint {
  uintptr_t frame;
  uintptr_t code;
  uintptr_t previous;  // the frame's caller then
};
__thread ImportHint t_import_hint __attribute__((tls_model("initial-exec"))) = {0, 0, 0};

// below_on_data_stack() tells whether `frame` lies below `chain` in the chunk of the thread's
// frame stack in use (3.11+). Frames there are pushed and popped in order, so one below a frame
// that runs runs too, and is one of its callers: no chase along the chain is needed to know it.
bool below_on_data_stack(const PythonLayout& layout, uintptr_t tstate, uintptr_t frame, uintptr_t chain) {
  if (layout.tstate_datastack_chunk == 0 || frame >= chain) return false;
  uintptr_t chunk = read_field<uintptr_t>(tstate, layout.tstate_datastack_chunk);
  if (chunk == 0) return false;
  // _PyStackChunk: previous, size (bytes, the header included), top, then the frames.
  uintptr_t end = chunk + read_field<size_t>(chunk, sizeof(uintptr_t));
  return frame >= chunk + 3 * sizeof(uintptr_t) && chain < end;
}

// hinted_frame() is the frame of `chain` (innermost first) where the hinted import frame still
// runs the same code, or 0. Only pointers are read on the way: no code object is looked at. A
// hinted frame below the chain's first on the data stack, with the code and the caller it had, is
// that frame still: a word of the stack that holds a frame's address is a frame's `previous`, so
// the two match only at the start of a frame.
uintptr_t hinted_frame(const PythonLayout& layout, uintptr_t tstate, uintptr_t chain) {
  const ImportHint hint = t_import_hint;
  if (hint.frame != 0 && below_on_data_stack(layout, tstate, hint.frame, chain) &&
      read_field<uintptr_t>(hint.frame, layout.frame_code) == hint.code &&
      read_field<uintptr_t>(hint.frame, layout.frame_previous) == hint.previous) {
    return hint.frame;
  }
  for (int steps = 0; chain != 0 && steps < kMaxChainSteps; ++steps) {
    if (chain == hint.frame) return read_field<uintptr_t>(chain, layout.frame_code) == hint.code ? chain : 0;
    chain = read_field<uintptr_t>(chain, layout.frame_previous);
  }
  return 0;
}

// Which frames a walk must read. A start-up stack of an import keeps only the code that imports,
// outward of the outermost import frame, and its innermost frame: the hook's caller, or when that
// caller is the evaluation loop itself, the innermost Python frame. The frames in between are
// passed over when the last walk's outermost import frame is still on the chain.
enum class WalkScope {
  kWhole,
  kImportCallers,                 // the frames from the outermost import frame out
  kInnermostAndImportCallers,     // those, after the innermost frame read
};

// innermost_frame() is the frame that `tstate` runs now, or 0.
uintptr_t innermost_frame(const PythonLayout& layout, uintptr_t tstate) {
  uintptr_t frame = layout.tstate_cframe != 0 ? read_field<uintptr_t>(tstate, layout.tstate_cframe) : tstate;
  return frame != 0 ? read_field<uintptr_t>(frame, layout.top_frame) : 0;
}

// walk() reads this thread's Python frames into `stack`. Without the GIL too: only this thread
// changes its own frame chain, and each frame holds its code object alive.
void walk(PythonStack* stack, WalkScope scope) {
  const Walker& w = g_walker;
  const PythonLayout& layout = w.layout;
  uintptr_t tstate = thread_state(w, &stack->own);
  if (tstate == 0) return;
  uintptr_t frame = innermost_frame(layout, tstate);
  if (frame == 0) return;
  bool skip = scope != WalkScope::kWhole && t_import_hint.frame != 0;
  uintptr_t hinted = 0;
  int hinted_from = 0;  // the index of the first frame read from the hinted frame out
  if (skip && scope == WalkScope::kImportCallers) {
    hinted = hinted_frame(layout, tstate, frame);
    if (hinted != 0) frame = hinted;
    skip = false;
  }
  for (int steps = 0; frame != 0 && steps < kMaxChainSteps && stack->frame_count < kMaxPythonFrames; ++steps) {
    if (skip && stack->frame_count == 1) {
      // The innermost frame is read: on to the hinted import frame.
      skip = false;
      hinted = hinted_frame(layout, tstate, frame);
      if (hinted != 0) {
        frame = hinted;
        hinted_from = 1;
      }
    }
    uintptr_t next = read_field<uintptr_t>(frame, layout.frame_previous);
    uint8_t owner = layout.frame_owner != 0 ? read_field<uint8_t>(frame, layout.frame_owner) : 0;
    if (layout.boundary == EvalBoundary::kShimFrame && owner == kFrameOwnedByCStack) {
      stack->end_call();  // each call's entry frame, below the frames it evaluates
      frame = next;
      continue;
    }
    bool entry = layout.boundary == EvalBoundary::kEveryFrame ||
                 (layout.boundary == EvalBoundary::kIsEntry && read_field<uint8_t>(frame, layout.frame_is_entry) != 0);
    uintptr_t code = read_field<uintptr_t>(frame, layout.frame_code);
    if (has_type(code, w.types.code)) {
      int64_t offset = instruction_offset(layout, frame, code);
      // A frame pushed but not yet at its first traceable instruction is not running code yet
      // (CPython's tracebacks skip it too).
      bool started = layout.code_first_traceable == 0 ? offset >= 0
                                                      : owner == kFrameOwnedByGenerator ||
                                                            offset >= 2 * int64_t{read_field<int32_t>(code, layout.code_first_traceable)};
      bool imports = false;
      uint32_t id = started && offset < (int64_t{1} << 32) ? python_code_id(layout, w.types, code, &imports) : 0;
      if (id != 0) {
        if (imports) {
          stack->outermost_import = stack->frame_count;
          stack->import_frame = frame;
          stack->import_code = code;
        }
        stack->frames[stack->frame_count++] = PythonStack::Frame{id, static_cast<uint32_t>(offset)};
      }
    }
    if (entry) stack->end_call();
    frame = next;
  }
  if (frame != 0) {
    stack->cut = true;
    if (stack->frame_count > stack->call_begin(stack->call_count)) stack->end_call();
  }
  t_import_hint = ImportHint{stack->import_frame, stack->import_code,
                             stack->import_frame != 0 ? read_field<uintptr_t>(stack->import_frame, layout.frame_previous) : 0};
  // The hinted frame's code no longer imports (its object was freed and another made at its
  // address): the frames passed over are needed after all.
  if (hinted != 0 && stack->outermost_import < hinted_from) {
    *stack = PythonStack{};
    walk(stack, WalkScope::kWhole);
  }
}

bool in_eval(uintptr_t address) { return address > g_walker.eval_begin && address <= g_walker.eval_end; }
bool in_interpreter(uintptr_t address) {
  return address >= g_walker.interpreter_begin && address < g_walker.interpreter_end;
}

// A stack with the Python frames put in: innermost first, before any cut to the depth.
struct MergedStack {
  uintptr_t frames[kMaxStackDepth + kMaxPythonFrames];
  int count = 0;
  int outermost_python = -1;  // index of the outermost Python frame
  int import_callers = -1;    // index of the first frame outward of the outermost import frame
};

// merge() puts the frames of `python` into the native stack `frames` (interpreter_capture_stack);
// false when they are not this stack's.
bool merge(const PythonStack& python, const uintptr_t* frames, int depth, MergedStack* merged) {
  // Each evaluation frame unwound is one call of the chain, innermost first; a subinterpreter's
  // chain covers the innermost calls only. Read from this thread's own state while it has
  // released the GIL, more calls unwound than the chain has mean the chain is not this stack's
  // (a subinterpreter ran the code above it), and the stack stays native.
  if (python.own && !python.cut) {
    int evals = 0;
    for (int i = 0; i < depth; ++i) evals += in_eval(frames[i]) ? 1 : 0;
    if (evals > python.call_count) return false;
  }
  int call = 0;
  auto put_call = [&](int index) {
    for (int f = python.call_begin(index); f < python.call_ends[index]; ++f) {
      merged->outermost_python = merged->count;
      merged->frames[merged->count++] = interpreted_frame(python.frames[f].code_id, python.frames[f].offset);
      if (f == python.outermost_import) merged->import_callers = merged->count;
    }
  };
  for (int i = 0; i < depth; ++i) {
    uintptr_t address = frames[i];
    if (in_eval(address)) {
      if (call < python.call_count) put_call(call++);
      continue;
    }
    if (call > 0 && in_interpreter(address)) continue;  // the interpreter's call machinery
    merged->frames[merged->count++] = address;
  }
  // The calls beyond what was unwound (the capture's depth, or an unwind that stopped) are the
  // callers of those above, in order: they follow as the outermost, without the native frames
  // between them.
  while (call < python.call_count) put_call(call++);
  return true;
}

// cut_to_depth() writes `merged` into `frames`, at most `max_depth` of them, and returns how many.
// What follows the outermost Python frame is the interpreter's start (Py_RunMain, main): the
// first to go when the stack is too deep. Then the innermost frames are kept, and the Python
// callers after them, up to half the depth.
int cut_to_depth(const MergedStack& merged, uintptr_t* frames, int max_depth) {
  int count = merged.count;
  if (count > max_depth && merged.outermost_python >= 0) count = merged.outermost_python + 1;
  if (count <= max_depth) {
    for (int i = 0; i < count; ++i) frames[i] = merged.frames[i];
    return count;
  }
  int python_frames = 0;
  for (int i = 0; i < count; ++i) python_frames += (merged.frames[i] & kInterpretedFrameTag) != 0 ? 1 : 0;
  int reserved = python_frames < max_depth / 2 ? python_frames : max_depth / 2;
  int kept = max_depth - reserved;
  for (int i = 0; i < kept; ++i) frames[i] = merged.frames[i];
  for (int i = kept; i < count && kept < max_depth; ++i) {
    if ((merged.frames[i] & kInterpretedFrameTag) != 0) frames[kept++] = merged.frames[i];
  }
  return kept;
}

// cut_startup() writes the start-up stack of `merged` into `frames`: its innermost frames, the
// marker, and the Python code that imports (or, outside an import, the Python callers of what is
// starting), without the interpreter's start below it.
int cut_startup(MergedStack& merged, const StackRequest& request, uint64_t marker, uintptr_t* frames) {
  int kept = merged.count < request.startup_depth ? merged.count : request.startup_depth;
  int from = merged.import_callers > kept ? merged.import_callers : kept;
  int depth = startup_stack_cut(merged.frames, merged.count, kept, marker, from, merged.outermost_python + 1,
                                request.depth);
  for (int i = 0; i < depth; ++i) frames[i] = merged.frames[i];
  return depth;
}

}  // namespace

bool python_frames_attach(void* scope, int minor, const uint8_t* runtime) {
  Walker walker{};
  if (!python_layout_for(minor, runtime, &walker.layout)) return false;
  walker.types.code = dlsym(scope, "PyCode_Type");
  walker.types.str = dlsym(scope, "PyUnicode_Type");
  walker.types.bytes = dlsym(scope, "PyBytes_Type");
  // Both are reads (of TLS, or of _PyRuntime in 3.10/3.11) that allocate nothing and take no lock.
  walker.gil_state = reinterpret_cast<ThreadStateGetter>(dlsym(scope, "PyGILState_GetThisThreadState"));
  void* current = dlsym(scope, minor >= 13 ? "PyThreadState_GetUnchecked" : "_PyThreadState_UncheckedGet");
  walker.current_state = reinterpret_cast<ThreadStateGetter>(current);
  void* eval = dlsym(scope, "_PyEval_EvalFrameDefault");
  if (walker.types.code == nullptr || walker.types.str == nullptr || walker.types.bytes == nullptr ||
      walker.gil_state == nullptr || walker.current_state == nullptr || eval == nullptr) {
    return false;
  }
  Dl_info info;
  void* entry = nullptr;
  if (dladdr1(eval, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return false;
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  if (symbol->st_size == 0) return false;
  walker.eval_begin = reinterpret_cast<uintptr_t>(eval);
  walker.eval_end = walker.eval_begin + symbol->st_size;
  dl_iterate_phdr(find_segment, &walker);
  if (walker.interpreter_end == 0 || !python_code_table_init()) return false;
  g_walker = walker;
  g_active.store(true, std::memory_order_release);
  return true;
}

uintptr_t interpreter_top_frame() {
  if (!g_active.load(std::memory_order_acquire)) return 0;
  const PythonLayout& layout = g_walker.layout;
  bool own;
  uintptr_t tstate = thread_state(g_walker, &own);
  return tstate != 0 ? innermost_frame(layout, tstate) : 0;
}

int interpreter_capture_stack(ThreadState* thread, const StackRequest& request, uintptr_t* frames) {
  if (!g_active.load(std::memory_order_acquire)) return -1;
  // A start-up stack that keeps only its innermost frame keeps no Python frame between it and the
  // outermost import.
  uintptr_t caller = leakscope_tls_hook_caller;
  WalkScope scope = request.startup_depth != 1 || caller == 0 ? WalkScope::kWhole
                    : in_eval(caller)                         ? WalkScope::kInnermostAndImportCallers
                                                              : WalkScope::kImportCallers;
  PythonStack python;
  walk(&python, scope);
  if (python.frame_count == 0) return -1;
  // A library loaded by an import (torch._C loading libtorch) is part of that import.
  uint64_t marker = python.outermost_import >= 0 ? kImportFrame : request.startup_marker;
  bool startup = request.startup_depth != 0 && marker != 0;
  // A start-up stack keeps few native frames: the code that imports comes from the chain.
  int depth = stack_capture(thread, frames, startup ? request.startup_depth : request.depth);
  MergedStack merged;
  if (!merge(python, frames, depth, &merged)) {
    return startup ? startup_stack_cut(frames, depth, depth, marker, depth, depth, request.depth) : depth;
  }
  return startup ? cut_startup(merged, request, marker, frames) : cut_to_depth(merged, frames, request.depth);
}

}  // namespace leakscope::internal
