// File: interpreter.h
//
// The seam between the runtime and a language runtime hosted by the traced process (an
// interpreter whose own data leakscope reads). The core never names a language: a backend
// implements this header (src/python/ for CPython), and the build links exactly one.
#ifndef LEAKSCOPE_CORE_INTERPRETER_H_
#define LEAKSCOPE_CORE_INTERPRETER_H_

namespace leakscope::internal {

// interpreter_attach() looks for an interpreter in the process, in the global scope and, when
// `handle` is a library dlopen() just returned, in that library; once it finds one it registers
// what the runtime watches (g_teardown_word, runtime.h) and later calls return at once. Called at
// start and after every successful dlopen, inside the runtime (hook depth > 0), never from a
// signal handler. Thread-safe. Allocates nothing through the hooked malloc.
void interpreter_attach(void* handle);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_INTERPRETER_H_
