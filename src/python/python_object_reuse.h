// File: python_object_reuse.h
//
// Objects CPython hands out again from its own free lists (floats, tuples, lists, dicts, ...)
// without calling its allocator. Unseen, such an object stays recorded where its memory was first
// allocated, often by a temporary at another line; CPython 3.13's reference tracer tells of every
// object made, and one whose memory was not allocated for it just now is recorded anew where it
// is made (docs/PYTHON.md, free lists).
#ifndef LEAKSCOPE_PYTHON_PYTHON_OBJECT_REUSE_H_
#define LEAKSCOPE_PYTHON_PYTHON_OBJECT_REUSE_H_

namespace leakscope::internal {

// python_object_reuse_watch() sets the reference tracer of the interpreter found in `scope`;
// false when it has none (before 3.13). Call before the interpreter initializes, from the library's
// start-up, with its small objects recorded through its allocator (python_allocator_hooks.h).
bool python_object_reuse_watch(void* scope);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_OBJECT_REUSE_H_
