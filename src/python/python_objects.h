// File: python_objects.h
//
// Raw reads of CPython objects for the frame walker: fields by byte offset, the type check, and
// the text of a str object copied out as UTF-8, all without calling the interpreter (which could
// allocate, take the GIL or run Python code). Only for objects that cannot go away meanwhile:
// those of frames on the calling thread while it holds the GIL.
#ifndef LEAKSCOPE_PYTHON_PYTHON_OBJECTS_H_
#define LEAKSCOPE_PYTHON_PYTHON_OBJECTS_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "python/python_layout.h"

namespace leakscope::internal {

template <typename T>
inline T read_field(uintptr_t object, size_t offset) {
  T value;
  memcpy(&value, reinterpret_cast<const void*>(object + offset), sizeof(value));
  return value;
}

// Every object starts with its reference count and its type.
constexpr size_t kObjectType = 8;
// PyVarObject's item count; PyBytesObject's bytes.
constexpr size_t kVarObjectSize = 16;
constexpr size_t kBytesData = 32;

inline bool has_type(uintptr_t object, const void* type) {
  return object != 0 && read_field<const void*>(object, kObjectType) == type;
}

// python_text() copies the text of str object `object` into `out` (at most `capacity` bytes, cut
// at a character boundary) and returns its length; 0 when it is not a str or not compact (code
// objects' names and file names always are).
size_t python_text(const PythonLayout& layout, const void* str_type, uintptr_t object, char* out, size_t capacity);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_PYTHON_PYTHON_OBJECTS_H_
