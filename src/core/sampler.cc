#include "core/sampler.h"

#include <atomic>

#include "core/sys.h"

namespace leakscope::internal {
namespace {

constexpr uint8_t kSaturated = 255;

// next_random() is xorshift64*: enough for drawing gaps, and state is one word per thread.
uint64_t next_random(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

// draw_gap() is an exponential variate with mean R: −R · ln U, U uniform in (0, 1].
int64_t draw_gap(ThreadState* thread) {
  if (thread->random_state == 0) {
    thread->random_state = (static_cast<uint64_t>(thread->tid) << 32) ^ sys::monotonic_ns() ^ 0x9e3779b97f4a7c15ull;
    if (thread->random_state == 0) thread->random_state = 1;
  }
  double uniform = (static_cast<double>(next_random(&thread->random_state) >> 11) + 1.0) / 9007199254740992.0;
  return static_cast<int64_t>(-static_cast<double>(g_sampler_interval) * sampler_log(uniform)) + 1;
}

}  // namespace

void sampler_set_interval(uint64_t bytes) { g_sampler_interval = bytes; }

bool sampler_take(ThreadState* thread, uint64_t size) {
  if (!thread->sampling_started) {
    thread->sampling_started = true;
    thread->bytes_until_sample = draw_gap(thread);
  }
  thread->bytes_until_sample -= static_cast<int64_t>(size);
  if (LS_LIKELY(thread->bytes_until_sample > 0)) return false;
  // One record however many gaps this allocation spans: p(s) already accounts for that.
  while (thread->bytes_until_sample <= 0) thread->bytes_until_sample += draw_gap(thread);
  return true;
}

SampleWeight sample_weight(uint64_t size, uintptr_t pointer) {
  if (g_sampler_interval == 0 || size == 0) return {size, 1};
  double probability = 1.0 - sampler_exp_negative(static_cast<double>(size) / static_cast<double>(g_sampler_interval));
  // 1/p blocks rounded to the nearest whole count would be biased where p is large: a block of
  // about R stands for 1.58, counted as 2, one of 0.8 R for 1.82... and blocks near R carry most
  // of a large-block leak's count. The fraction is counted as one more block with its own
  // probability instead, drawn from the block's address: the same at its free, right on average.
  double blocks = 1.0 / probability;
  double whole = static_cast<double>(static_cast<uint64_t>(blocks));
  double draw = static_cast<double>((static_cast<uint64_t>(pointer) * 0x9e3779b97f4a7c15ull) >> 11) / 9007199254740992.0;
  uint64_t counted = static_cast<uint64_t>(whole) + (draw < blocks - whole ? 1 : 0);
  return {static_cast<uint64_t>(static_cast<double>(size) / probability + 0.5), counted};
}

void sampler_filter_add(uintptr_t pointer) {
  std::atomic<uint8_t>& counter = g_sampler_filter[sampler_filter_slot(pointer)];
  uint8_t value = counter.load(std::memory_order_relaxed);
  while (value != kSaturated && !counter.compare_exchange_weak(value, value + 1, std::memory_order_relaxed)) {
  }
}

void sampler_filter_remove(uintptr_t pointer) {
  std::atomic<uint8_t>& counter = g_sampler_filter[sampler_filter_slot(pointer)];
  uint8_t value = counter.load(std::memory_order_relaxed);
  while (value != kSaturated && value != 0 &&
         !counter.compare_exchange_weak(value, value - 1, std::memory_order_relaxed)) {
  }
}

double sampler_exp_negative(double x) {
  // e^(−x) = (e^(−x / 2^k))^(2^k), with x / 2^k < 1/64 where a 5-term Taylor series is exact to
  // double precision for our purpose (relative error < 1e-12).
  int halvings = 0;
  while (x > 1.0 / 64 && halvings < 60) {
    x /= 2;
    ++halvings;
  }
  double term = 1, sum = 1;
  for (int n = 1; n <= 5; ++n) {
    term *= -x / n;
    sum += term;
  }
  while (halvings-- > 0) sum *= sum;
  return sum;
}

double sampler_log(double x) {
  // x = m · 2^e with m in [1, 2); ln m = 2·atanh((m − 1)/(m + 1)), a series in z ≤ 1/3.
  int exponent = 0;
  while (x >= 2) {
    x /= 2;
    ++exponent;
  }
  while (x < 1) {
    x *= 2;
    --exponent;
  }
  double z = (x - 1) / (x + 1), z2 = z * z, term = z, sum = 0;
  for (int n = 1; n <= 25; n += 2) {
    sum += term / n;
    term *= z2;
  }
  return 2 * sum + exponent * 0.6931471805599453;
}

}  // namespace leakscope::internal
