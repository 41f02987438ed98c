/* File: leakscope.h
 *
 * The leakscope C API: name the task a thread is working on, take a snapshot on demand, and read
 * live counters. Every call is safe whether or not the program runs under leakscope:
 *
 *   - Link with -lleakscope_api (pkg-config leakscope). That small library holds no-op versions
 *     of these functions. When the program runs under LD_PRELOAD=libleakscope.so, the preloaded
 *     definitions come first in symbol order and take over; without it the no-ops answer.
 *
 * All functions are thread-safe and never throw. None is async-signal-safe.
 */
#ifndef LEAKSCOPE_LEAKSCOPE_H_
#define LEAKSCOPE_LEAKSCOPE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where bytes come from (DESIGN.md "domain"). Values are stable. */
typedef enum leakscope_domain_t {
  LEAKSCOPE_DOMAIN_HEAP = 0,         /* malloc family, operator new */
  LEAKSCOPE_DOMAIN_MMAP = 1,         /* mmap, mremap */
  LEAKSCOPE_DOMAIN_BRK = 2,          /* brk, sbrk called by the program */
  LEAKSCOPE_DOMAIN_C10_CPU = 3,      /* PyTorch CPU tensor storage */
  LEAKSCOPE_DOMAIN_CUDA = 4,         /* device memory */
  LEAKSCOPE_DOMAIN_CUDA_HOST = 5,    /* pinned host memory */
  LEAKSCOPE_DOMAIN_CUDA_MANAGED = 6, /* managed memory */
  LEAKSCOPE_DOMAIN_C10_CUDA = 7      /* PyTorch CUDA caching-allocator blocks */
} leakscope_domain_t;

/* leakscope_task_begin()
 * Marks the calling thread as working on task `name` (copied), with an id of the caller's
 * choosing (0 when there is none). Tasks nest: the innermost one tags every allocation the thread
 * makes until the matching leakscope_task_end(). Reports aggregate by name; at most 64 distinct
 * ids per name are kept apart, later ids count under id 0; at most 4096 distinct names, later new
 * names count under one task. An empty (or null) name is no task: until its end, the thread's
 * allocations carry none, whatever tasks are open below it.
 * Returns 0, or -1 when leakscope is not tracking (then leakscope_task_end() is still safe). */
int leakscope_task_begin(const char* name, uint64_t id);

/* leakscope_task_end()
 * Ends the calling thread's innermost task. Returns 0, or -1 when there is no task to end or
 * leakscope is not tracking. */
int leakscope_task_end(void);

/* leakscope_thread_name()
 * Names the calling thread in leakscope's reports (at most 63 bytes are kept, cut at a character), in place of the
 * name the kernel has for it, which is left as it is: for runtimes whose threads have names of
 * their own (Python's threading.Thread.name). Returns 0, or -1 when leakscope is not tracking. */
int leakscope_thread_name(const char* name);

/* leakscope_snapshot_now()
 * Writes a snapshot now and returns once it is on disk: 0, or -1 when not tracking or on a
 * write error. */
int leakscope_snapshot_now(void);

/* leakscope_live_bytes()
 * Bytes of `domain` allocated and not yet freed, as tracked right now: exact in the default
 * exact mode. Returns 0 when not tracking, -1 for an unknown domain. */
int64_t leakscope_live_bytes(leakscope_domain_t domain);

/* leakscope_is_active()
 * 1 when the process is being tracked by leakscope, else 0. */
int leakscope_is_active(void);

/* leakscope_leak_check()
 * Pauses the process's other threads, scans its memory for blocks no pointer reaches (as
 * leak_check=1 does at exit, docs/RUNTIME.md), writes a snapshot carrying what each site lost, and
 * returns the bytes found lost, directly and indirectly. -1 when not tracking, in sampled mode, or
 * when the check could not run. */
int64_t leakscope_leak_check(void);

/* leakscope_register_root_region(), leakscope_unregister_root_region()
 * Memory of the program's own that holds pointers to its blocks (a pool it mapped itself, a
 * buffer another runtime keeps), which a leak check does not scan by default: from now on it is
 * scanned as a root, until unregistered with the same begin and size. 0, or -1 when not tracking,
 * the region is empty, the table of regions is full (1024) or, to unregister, it was not
 * registered. */
int leakscope_register_root_region(const void* begin, size_t size);
int leakscope_unregister_root_region(const void* begin, size_t size);

/* leakscope_stream_path()
 * The path of the stream this process writes, as it was opened (relative to the working
 * directory of that moment when the output option is relative), or NULL when not tracking: for
 * tools in the process that read their own run (the pytest plugin). A traced child of fork()
 * writes a file of its own, and gets its path from here too. */
const char* leakscope_stream_path(void);

#ifdef __cplusplus
}
#endif

#endif /* LEAKSCOPE_LEAKSCOPE_H_ */
