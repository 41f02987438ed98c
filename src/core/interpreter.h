// File: interpreter.h
//
// The seam between the runtime and a language runtime hosted by the traced process (an
// interpreter whose own data leakscope reads). The core never names a language: a backend
// implements this header (src/python/ for CPython), and the build links exactly one.
//
// An interpreter backend does three things: it registers the word that says its teardown has
// begun (g_teardown_word, runtime.h); it puts the frames of the interpreted code running on a
// thread into that thread's native stack, where the interpreter's own frames are; and it keeps
// the table of interpreted code those frames name, which the snapshot writer emits.
#ifndef LEAKSCOPE_CORE_INTERPRETER_H_
#define LEAKSCOPE_CORE_INTERPRETER_H_

#include <stdint.h>

namespace leakscope::internal {

struct ThreadState;

// interpreter_attach() looks for an interpreter in the process, in the global scope and, when
// `handle` is a library dlopen() just returned, in that library; once it finds one it registers
// what the runtime watches and reads, and later calls return at once. Called at start and after
// every successful dlopen, inside the runtime (hook depth > 0), never from a signal handler.
// Thread-safe. Allocates nothing through the hooked malloc.
void interpreter_attach(void* handle);

// interpreter_found() tells whether an interpreter was found (a leak check then scans the
// program's own mappings, where an interpreter keeps pools of objects). Signal-safe.
bool interpreter_found();

// What the recorder asks of a stack.
struct StackRequest {
  int depth;                // frames kept at most
  int startup_depth;        // innermost frames kept of a start-up stack; 0 keeps those whole
  uint64_t startup_marker;  // the native start-up phase the thread is in (startup_phase.h), or 0
};

// interpreter_capture_stack() captures the calling thread's stack into `frames` (room for
// kMaxStackDepth) when it runs interpreted code, and returns its depth; -1 when it runs none (the
// recorder then captures a native stack). The interpreted frames stand where the interpreter's
// evaluation frames are, the interpreter's own call machinery between them is left out, and the
// interpreted callers beyond what was unwound follow as the outermost (docs/PYTHON.md: what is
// kept when they do not all fit). Interpreted frames are tagged (stream_format.h,
// kInterpretedFrameTag). A start-up stack (a native start-up phase, or an import of interpreted
// code) is cut as startup_stack_cut() says, the code that imports (`import torch` and its
// interpreted callers) after the marker. Called in the record step.
int interpreter_capture_stack(ThreadState* thread, const StackRequest& request, uintptr_t* frames);

// interpreter_top_frame() is the address of the innermost interpreted frame on the calling thread
// (the first that interpreter_capture_stack() reads), or 0 when it runs none. Signal-safe;
// allocates nothing.
uintptr_t interpreter_top_frame();

// One entry of the interpreted-code table: what a tagged frame's code id names.
struct InterpretedCode {
  uint32_t language;      // stream_format.h, kLanguage*
  uint32_t table_format;  // stream_format.h, kLineTable*
  int32_t first_line;
  const char* name;
  uint32_t name_length;
  const char* file;
  uint32_t file_length;
  const uint8_t* table;   // the line table, as the interpreter keeps it
  uint32_t table_length;
};

// interpreter_code_end() is one past the largest code id (ids are dense from 1);
// interpreter_code_get() reads entry `id`. Thread-safe.
uint32_t interpreter_code_end();
bool interpreter_code_get(uint32_t id, InterpretedCode* code);

// Fork: the code table's lock.
void interpreter_before_fork();
void interpreter_after_fork_parent();
void interpreter_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_INTERPRETER_H_
