// File: python_layout.h
//
// Where CPython 3.10-3.13 keep what the frame walker reads, on x86-64 release builds (not
// free-threaded, not Py_DEBUG): byte offsets taken from each version's own headers, and on 3.13
// from the _Py_DebugOffsets that the running interpreter publishes at the start of _PyRuntime,
// which win where they exist. docs/PYTHON.md explains each field.
#ifndef LEAKSCOPE_PYTHON_PYTHON_LAYOUT_H_
#define LEAKSCOPE_PYTHON_PYTHON_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#include "core/stream_format.h"

namespace leakscope::internal {

// How a frame's outermost Python frame of one eval call is marked.
enum class EvalBoundary : uint8_t {
  kEveryFrame,  // 3.10: each frame is its own _PyEval_EvalFrameDefault call
  kIsEntry,     // 3.11: the frame's is_entry byte
  kShimFrame,   // 3.12+: a frame owned by the C stack follows the outermost one
};

struct PythonLayout {
  int minor = 0;
  // PyThreadState
  size_t tstate_thread_id = 0;
  size_t tstate_cframe = 0;     // 3.11/3.12: _PyCFrame*; 0 when the top frame is in the tstate
  size_t top_frame = 0;         // in the tstate, or in the _PyCFrame
  size_t tstate_datastack_chunk = 0;  // 3.11+: the chunk of the frames' stack in use; 0 in 3.10
  // The frame (PyFrameObject in 3.10, _PyInterpreterFrame after)
  size_t frame_code = 0;
  size_t frame_previous = 0;
  size_t frame_instruction = 0;  // 3.10: int f_lasti in code units; later: a pointer
  bool instruction_is_index = false;
  size_t frame_is_entry = 0;     // 3.11 only
  size_t frame_owner = 0;        // 3.11+; 0 in 3.10
  EvalBoundary boundary = EvalBoundary::kEveryFrame;
  // PyCodeObject
  size_t code_first_line = 0;
  size_t code_filename = 0;
  size_t code_name = 0;
  size_t code_qualname = 0;      // 0: none (3.10)
  size_t code_line_table = 0;
  size_t code_bytecode = 0;      // 3.11+: where the instructions start in the code object
  size_t code_first_traceable = 0;  // 3.11+, in code units
  uint32_t line_table_format = kLineTablePython310;  // stream_format.h
  // PyUnicodeObject
  size_t ascii_data = 0;         // sizeof(PyASCIIObject)
  size_t compact_utf8_length = 0;
  size_t compact_utf8 = 0;
  size_t compact_data = 0;       // sizeof(PyCompactUnicodeObject)
};

// Frame owners (3.11+).
constexpr uint8_t kFrameOwnedByGenerator = 1;
constexpr uint8_t kFrameOwnedByCStack = 3;

// python_layout_for() fills `layout` for CPython 3.`minor`, whose _PyRuntime is at `runtime`;
// false for a version or build it does not know (a 3.13 whose debug offsets say free-threaded).
bool python_layout_for(int minor, const uint8_t* runtime, PythonLayout* layout);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_LAYOUT_H_
