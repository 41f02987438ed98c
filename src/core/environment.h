// File: environment.h
//
// Setting the process's environment from inside the runtime. setenv() copies each "NAME=VALUE"
// into a block it allocates and keeps them in a tree whose root is a block too; made while
// leakscope's own allocations pass unrecorded, that root would be a block no leak check knows, and
// every variable the program sets later would hang off it, "lost". putenv() of leakscope's own
// static storage touches neither.
#ifndef LEAKSCOPE_CORE_ENVIRONMENT_H_
#define LEAKSCOPE_CORE_ENVIRONMENT_H_

namespace leakscope::internal {

// environment_set() sets NAME=VALUE (unless the variable is set and `overwrite` is false); false
// when the text does not fit or the storage for such settings is used up (a handful per process).
// Not thread-safe: called at start.
bool environment_set(const char* name, const char* value, bool overwrite);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_ENVIRONMENT_H_
