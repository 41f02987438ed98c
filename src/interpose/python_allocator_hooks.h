// File: python_allocator_hooks.h
//
// CPython's memory and object allocator domains (PyMem_Malloc, PyObject_Malloc), wrapped through
// the interpreter's own PyMem_SetAllocator before it runs, so that pymalloc keeps serving objects
// of 512 bytes or less, at its speed and with its memory layout, while each block is recorded as
// a heap block with its stack. What pymalloc maps for its arenas is then its own work, not
// counted again (docs/PYTHON.md).
#ifndef LEAKSCOPE_INTERPOSE_PYTHON_ALLOCATOR_HOOKS_H_
#define LEAKSCOPE_INTERPOSE_PYTHON_ALLOCATOR_HOOKS_H_

namespace leakscope::internal {

// python_allocator_hooks_install() wraps the two domains of the interpreter found in `scope`;
// false when it has no PyMem_GetAllocator/PyMem_SetAllocator. Call once, before the interpreter
// initializes (from the library's start-up): a wrapper put in later would see frees of blocks it
// never saw made, which is harmless, but would miss what was made before.
bool python_allocator_hooks_install(void* scope);

// python_arena_hooks_install() wraps the arena allocator of the interpreter found in `scope`, for a
// run whose objects of 512 bytes or less are not recorded one by one (sampled mode,
// python_malloc=0, an allocator the user chose): each arena it maps is then recorded at one marker
// stack, `[the interpreter's arenas for small objects]`, instead of at whatever Python line
// happened to need a new one, which named a temporary's line for a leak's growth. False when the
// interpreter has no PyObject_SetArenaAllocator.
bool python_arena_hooks_install(void* scope);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_PYTHON_ALLOCATOR_HOOKS_H_
