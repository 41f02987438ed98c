// The frame-pointer walk: each frame's saved frame pointer sits at [fp] and its return address at
// [fp + 8], so a stack is a linked list; about 5x cheaper than DWARF unwinding. It is only right
// where the code keeps frame pointers, so it reads nothing outside the thread's own stack, stops at
// the first frame that does not look like one (outside the stack, not above the previous frame,
// misaligned, or a zero return address), and gives up (returns 0, and the caller uses libunwind)
// when that leaves fewer than kMinTrustedFrames frames of the program.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/stack_capture.h"
#include "core/thread_registry.h"
#include "core/types.h"

namespace leakscope::internal {
namespace {

constexpr int kMinTrustedFrames = 3;

}  // namespace

bool stack_capture_thread_bounds(ThreadState* thread) {
  if (thread->stack_end != 0) return true;
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return false;
  void* base = nullptr;
  size_t size = 0;
  bool ok = pthread_attr_getstack(&attributes, &base, &size) == 0;
  pthread_attr_destroy(&attributes);
  if (!ok) return false;
  thread->stack_begin = reinterpret_cast<uintptr_t>(base);
  thread->stack_end = thread->stack_begin + size;
  return true;
}

bool stack_capture_has_room(ThreadState* thread) {
  uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (stack_capture_thread_bounds(thread) && here >= thread->stack_begin && here < thread->stack_end) return true;
  stack_t alternate;
  if (syscall(SYS_sigaltstack, nullptr, &alternate) != 0 || (alternate.ss_flags & SS_ONSTACK) == 0) return true;
  return here - reinterpret_cast<uintptr_t>(alternate.ss_sp) >= kCaptureStackNeed;
}

int stack_capture_frame_pointers(ThreadState* thread, uintptr_t* frames, int max_depth) {
  if (thread == nullptr || !stack_capture_thread_bounds(thread)) return 0;
  uintptr_t frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  // Callers' frames live between this frame and the top of the stack; nothing below this frame is
  // read (for the main thread, the range pthread reports reaches far below what is mapped). The
  // upper test is written without `frame + 16`, which wraps for a garbage frame near 2^64.
  uintptr_t lowest = frame > thread->stack_begin ? frame : thread->stack_begin;
  uintptr_t highest = thread->stack_end - 2 * sizeof(uintptr_t);
  int depth = 0, own_frames = 0;
  while (depth < max_depth) {
    if (frame < lowest || frame > highest || (frame & 7) != 0) break;
    const uintptr_t* record = reinterpret_cast<const uintptr_t*>(frame);
    uintptr_t caller_frame = record[0];
    uintptr_t return_address = record[1];
    if (return_address == 0) break;
    if (depth == 0 && stack_capture_is_own_code(return_address) && own_frames < kOwnFrameAllowance) {
      ++own_frames;  // the hook and the recorder
    } else {
      frames[depth++] = return_address;
    }
    if (caller_frame <= frame) break;  // the stack grows down: callers live above
    frame = caller_frame;
  }
  return depth >= kMinTrustedFrames ? depth : 0;
}

}  // namespace leakscope::internal
