// File: hooks.h
//
// One handler per interposed function, declared from hooks.inc; exports.cc forwards each exported
// symbol to its handler. Every handler reads top to bottom in three steps (STYLE.md):
//   guard   hook_should_record() (hook_guard.h): bootstrapping, leakscope's own bookkeeping, the
//           real allocator's own work and disabled tracking pass straight through;
//   call    the real function, inside an AllocatorCall when it is an allocator function;
//   record  inside a Bookkeeping scope: only after a successful allocation, and *before* the real
//           call for a free, so that the address cannot be handed out again before its record is
//           gone.
#ifndef LEAKSCOPE_INTERPOSE_HOOKS_H_
#define LEAKSCOPE_INTERPOSE_HOOKS_H_

#include "interpose/hook_guard.h"
#include "interpose/real_functions.h"

namespace leakscope::internal {

#define LS_HOOK(name, ret, params, args, domain, need, nothrow) ret handle_##name params;
#define LS_HOOK_MANUAL(name, ret, params, args, domain, need, nothrow)
#include "interpose/hooks.inc"
#undef LS_HOOK_MANUAL
#undef LS_HOOK

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_INTERPOSE_HOOKS_H_
