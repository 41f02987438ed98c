// File: python_frames.h
//
// Python frames in native stacks. When a thread with a Python thread state allocates, the walker reads
// its interpreter frame chain (raw reads: no call into Python) and the merge puts those frames
// where the interpreter's _PyEval_EvalFrameDefault calls are in the native stack, innermost
// first, as py-spy --native shows them: each evaluation call stands for the run of Python frames
// it executes (one in 3.10; in 3.11 up to the frame marked as the call's entry; in 3.12+ up to the
// frame above the call's shim frame). The interpreter's other frames below the innermost Python
// frame (its call machinery) are left out; everything else, the allocator path above and the
// C extensions in between, stays.
#ifndef LEAKSCOPE_PYTHON_PYTHON_FRAMES_H_
#define LEAKSCOPE_PYTHON_PYTHON_FRAMES_H_

#include <stdint.h>

namespace leakscope::internal {

// python_frames_attach() sets the walker up for the CPython 3.`minor` whose symbols `scope`
// resolves and whose _PyRuntime is at `runtime`; false (and Python frames stay off) for a version
// or build it does not know, or when a symbol it needs is missing. Called once, outside hooks.
bool python_frames_attach(void* scope, int minor, const uint8_t* runtime);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_FRAMES_H_
