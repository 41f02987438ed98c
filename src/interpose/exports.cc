// The exported symbols that take the place of libc's, generated from hooks.inc. Each notes its
// caller (HookCaller, stack_capture.h) and forwards to its handler; no logic lives here.
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/stack_capture.h"
#include "core/types.h"
#include "interpose/hooks.h"

#define LS_NOTHROW noexcept
#define LS_MAYTHROW

#define LS_HOOK(name, ret, params, args, domain, need, nothrow) \
  LS_EXPORT ret name params nothrow {                                        \
    leakscope::internal::HookCaller caller(__builtin_return_address(0));    \
    return leakscope::internal::handle_##name args;                         \
  }
#define LS_HOOK_MANUAL(name, ret, params, args, domain, need, nothrow)
#include "interpose/hooks.inc"
#undef LS_HOOK_MANUAL
#undef LS_HOOK
