// File: sampler.h
//
// Sampled mode (option sample=R bytes): record a Poisson sample of allocations, with unbiased
// estimates, at a fraction of the cost of recording every one.
//
// The maths (as jemalloc and tcmalloc): every byte allocated is picked independently with
// probability 1/R. Equivalently, the gaps between picked bytes are exponentially distributed with
// mean R, so each thread draws a gap, counts down the bytes it allocates, and records the
// allocation during which the count crosses zero (then draws the next gap). An allocation of s
// bytes is thus recorded with probability
//     p(s) = 1 − e^(−s/R)
// and counting a recorded one as s/p(s) bytes and 1/p(s) blocks makes every total an unbiased
// estimate. With R = 512 KiB: a 64-byte block is recorded with p ≈ 1.2·10⁻⁴ and stands for about
// 8192 blocks of 64 bytes; a 4 MiB block is recorded with p ≈ 0.9997 and stands for itself. The
// relative error of a site's estimate is about 1/√(bytes/R): ±3% for a site of 512 MiB at R =
// 512 KiB, ±10% for one of 50 MiB.
//
// A free must know whether its block was recorded without taking a table lock for the (many)
// blocks that were not: a counting filter over pointer hashes answers "certainly not" for them.
//
// Thread-safe; allocation-free; the filter and the weights are signal-safe.
#ifndef LEAKSCOPE_CORE_SAMPLER_H_
#define LEAKSCOPE_CORE_SAMPLER_H_

#include <stdint.h>

#include <atomic>

#include "core/thread_registry.h"

namespace leakscope::internal {

// R, or 0 in exact mode. Set once at init, before any hook records; read on every hooked call.
inline constinit uint64_t g_sampler_interval = 0;

// sampler_set_interval() sets R; 0 means exact mode. Called once at init.
void sampler_set_interval(uint64_t bytes);
inline uint64_t sampler_interval() { return g_sampler_interval; }
inline bool sampler_enabled() { return g_sampler_interval != 0; }

// sampler_skip() is the fast path of sampler_take(): when this thread's gap is longer than `size`
// it counts the bytes and returns true (not recorded); otherwise it changes nothing, and
// sampler_take() decides. Inline, as the hooks call it on every allocation in sampled mode.
LS_ALWAYS_INLINE bool sampler_skip(ThreadState* thread, uint64_t size) {
  if (LS_LIKELY(thread->bytes_until_sample > static_cast<int64_t>(size))) {
    thread->bytes_until_sample -= static_cast<int64_t>(size);
    return true;
  }
  return false;
}

// sampler_take() counts `size` bytes against this thread's gap and tells whether this
// allocation is to be recorded.
bool sampler_take(ThreadState* thread, uint64_t size);

struct SampleWeight {
  uint64_t bytes;
  uint64_t blocks;
};

// sample_weight() is what a recorded block of `size` bytes at `pointer` stands for: {size, 1} in
// exact mode, {size / p, 1 / p} when sampling, the bytes rounded and the blocks counted whole,
// the fraction as one more with its probability drawn from `pointer`. A pure function of size and
// address, so alloc and free agree.
SampleWeight sample_weight(uint64_t size, uintptr_t pointer);

// The counting filter of recorded heap blocks (sampled mode only). Every free in sampled mode
// reads one counter, so the filter must stay in cache: 128 KiB of one-byte counters. Recorded
// blocks are few (one per R bytes of live heap, plus large blocks), so a slot is rarely shared; a
// counter that reaches 255 stays there ("maybe" for ever), which costs only table lookups for that
// slot and never a missed free.
constexpr uint32_t kSamplerFilterBits = 17;
inline constinit std::atomic<uint8_t> g_sampler_filter[1u << kSamplerFilterBits] = {};

inline uint32_t sampler_filter_slot(uintptr_t pointer) {
  return static_cast<uint32_t>(((static_cast<uint64_t>(pointer) >> 4) * 0x9e3779b97f4a7c15ull) >>
                               (64 - kSamplerFilterBits));
}

void sampler_filter_add(uintptr_t pointer);
void sampler_filter_remove(uintptr_t pointer);

// A block is added before its pointer is returned to the program, so a free of it (ordered after
// by the program) sees the count; a zero is therefore a certain "not recorded".
inline bool sampler_filter_may_contain(uintptr_t pointer) {
  return g_sampler_filter[sampler_filter_slot(pointer)].load(std::memory_order_relaxed) != 0;
}

// Numerics without libm (the preload links only libc and libunwind); exposed for tests.
double sampler_exp_negative(double x);  // e^(−x) for x ≥ 0
double sampler_log(double x);           // ln x for x > 0

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_SAMPLER_H_
