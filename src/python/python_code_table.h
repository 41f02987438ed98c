// File: python_code_table.h
//
// The code objects that Python frames in recorded stacks run, interned to dense ids: a frame is
// stored as (code id, instruction offset), and the id's entry holds what names it (qualified
// name, file, first line) and the code's line table, copied out when the code is first seen, so
// the line is decoded offline and a code object that dies cannot lend its name to another that
// takes its address: an entry is found by the code's address and the objects that name it.
#ifndef LEAKSCOPE_PYTHON_PYTHON_CODE_TABLE_H_
#define LEAKSCOPE_PYTHON_PYTHON_CODE_TABLE_H_

#include <stdint.h>

#include "python/python_layout.h"

namespace leakscope::internal {

// What the table needs of the interpreter: its layout and the types it checks against.
struct PythonTypes {
  const void* code;
  const void* str;
  const void* bytes;
};

bool python_code_table_init();

// python_code_id() is the id of the code object at `code` (a PyCodeObject, checked by the
// caller), interning it on first sight; 0 when memory is exhausted. `*imports` says whether the
// code is the interpreter's import machinery (importlib's bootstrap). Lock-free for codes seen
// before. Called on the thread whose frame runs the code, with or without the GIL: the frame keeps
// the code and the strings that name it alive, and they never change.
uint32_t python_code_id(const PythonLayout& layout, const PythonTypes& types, uintptr_t code, bool* imports);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_CODE_TABLE_H_
