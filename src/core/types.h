// File: types.h
//
// The vocabulary of leakscope, shared by the runtime and the report side. See DESIGN.md.
//
// Glossary
//   domain   where the bytes come from: heap (malloc family, operator new), mmap, brk, c10_cpu,
//            cuda, cuda_host, cuda_managed, c10_cuda. Domains layer; reports never add layers.
//   stack    return addresses of the allocating call, innermost first, interned to a StackId.
//   site     (domain, stack), interned to a SiteId.
//   thread   a slot (ThreadSlot) that one OS thread holds at a time; the slot of a thread that
//            is gone passes to a new one, and the stream tells the threads of a slot apart by
//            the epochs they lived in (docs/FORMAT.md, THREADS); tid and name are kept beside it.
//   task     the unit of work a thread is doing (leakscope_task_begin/end), interned with its
//            user id to a TaskId; 0 means none.
//   triple   (thread, task, stack) of one domain, interned to a TripleId; every allocation
//            carries one. A triple belongs to exactly one site.
//   epoch    index of the snapshot interval in which an allocation was born.
//   snapshot the state at the end of an epoch, written as one frame of the .lsc stream.
//
// Ids are distinct enum types so that one kind of id cannot be passed for another.
#ifndef LEAKSCOPE_CORE_TYPES_H_
#define LEAKSCOPE_CORE_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#define LS_LIKELY(x) __builtin_expect(!!(x), 1)
#define LS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LS_NOINLINE __attribute__((noinline))
#define LS_ALWAYS_INLINE inline __attribute__((always_inline))
#define LS_EXPORT extern "C" __attribute__((visibility("default")))

namespace leakscope::internal {

// Domain numbering is part of the stream format (docs/FORMAT.md) and the C API.
enum class Domain : uint8_t {
  kHeap = 0,
  kMmap = 1,
  kBrk = 2,
  kC10Cpu = 3,
  kCuda = 4,
  kCudaHost = 5,
  kCudaManaged = 6,
  kC10Cuda = 7,
};
constexpr int kDomainCount = 8;

// domain_name() returns the DESIGN.md name of `domain` ("heap", "mmap", ...), or "unknown".
const char* domain_name(Domain domain);

enum class StackId : uint32_t { kNone = 0 };
enum class SiteId : uint32_t { kNone = 0 };
enum class TripleId : uint32_t { kNone = 0 };
enum class ThreadSlot : uint32_t { kNone = 0 };
enum class TaskId : uint32_t { kNone = 0 };
enum class Epoch : uint32_t {};

template <typename Id>
constexpr uint32_t raw(Id id) {
  return static_cast<uint32_t>(id);
}

// Deepest stack the runtime captures; the `depth` option is clamped to it.
constexpr int kMaxStackDepth = 128;

// Lifetimes of freed bytes are kept per site in log2 buckets of whole epochs:
// bucket 0 holds bytes freed in their birth epoch, bucket b >= 1 lifetimes in [2^(b-1), 2^b).
constexpr int kLifetimeBuckets = 16;

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_TYPES_H_
