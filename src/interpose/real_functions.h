// File: real_functions.h
//
// The functions leakscope interposes, as found next in symbol order (glibc, or an allocator such
// as jemalloc preloaded after leakscope), resolved with dlsym(RTLD_NEXT). Until they are
// resolved, and for the allocation dlsym itself may make, a static bootstrap pool serves memory.
#ifndef LEAKSCOPE_INTERPOSE_REAL_FUNCTIONS_H_
#define LEAKSCOPE_INTERPOSE_REAL_FUNCTIONS_H_

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

namespace leakscope::internal {

struct RealFunctions {
#define LS_HOOK(name, ret, params, args, domain, need, nothrow) ret(*name) params;
#define LS_HOOK_MANUAL LS_HOOK
#include "interpose/hooks.inc"
#undef LS_HOOK_MANUAL
#undef LS_HOOK
};

extern RealFunctions g_real;

// real_functions_resolve() fills g_real. On a missing required function it writes the reason to
// `error` and returns false. Not thread-safe: runtime_init calls it once.
bool real_functions_resolve(char* error, size_t size);

// real_functions_libraries_loaded() counts the libraries dlopen has loaded so far (dl_hooks.cc
// advances it): a real function not found before is worth looking for again only once it moved.
uint32_t real_functions_libraries_loaded();
void real_functions_count_library_load();

// bootstrap_alloc() serves memory before the real allocator is known (zeroed; nullptr when the
// pool is spent). bootstrap_owns() tells whether a pointer came from it; such blocks are never
// passed to the real free and never freed.
void* bootstrap_alloc(size_t size, size_t alignment);
bool bootstrap_owns(const void* pointer);
size_t bootstrap_size(const void* pointer);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_REAL_FUNCTIONS_H_
