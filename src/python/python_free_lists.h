// File: python_free_lists.h
//
// Tuples CPython keeps after their last reference went. Its tuple destructor puts a tuple of
// fewer than 20 items on a free list of its own (up to 2000 of each length, 3.10-3.13) instead of
// freeing it, to hand out again for the next tuple of that length. Unseen, each such tuple stays
// recorded live at the line that made it: a bounded cache of tuples (functools.lru_cache) then
// looks like a leak until the free list is full, and the gate fails a correct program. leakscope
// stands in front of the tuple type's destructor and records what it keeps as the interpreter's:
// at one free-list stack, remembering the stack each had, to which one handed out again goes back
// (core/parked_blocks.h; docs/PYTHON.md, free lists).
#ifndef LEAKSCOPE_PYTHON_PYTHON_FREE_LISTS_H_
#define LEAKSCOPE_PYTHON_PYTHON_FREE_LISTS_H_

namespace leakscope::internal {

// python_free_lists_watch() puts leakscope's destructor in front of the tuple type's in the
// interpreter found in `scope`; false when its type object is not as 3.10-3.13 lay it out. Call
// before the interpreter initializes, with its small objects recorded one by one.
bool python_free_lists_watch(void* scope);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_FREE_LISTS_H_
