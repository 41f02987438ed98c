// File: memory_budget.h
//
// The budget for the runtime's own memory (option max_memory). A process with hundreds of
// thousands of distinct stacks (libtorch's static initializers, Python importing torch) would
// otherwise have leakscope grow past the service it explains. From 7/8 of the budget, stacks not
// seen before are cut to kBudgetStackDepth frames; at the budget no new stack, site or triple is
// made for them: their allocations are counted under the one marker stack kOverBudgetFrame,
// still exactly in bytes and blocks. Known stacks keep their sites throughout. The stage only
// rises; the snapshot writer says it (INFO) and the runtime says it once on stderr.
#ifndef LEAKSCOPE_CORE_MEMORY_BUDGET_H_
#define LEAKSCOPE_CORE_MEMORY_BUDGET_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "core/stream_format.h"

namespace leakscope::internal {

enum class BudgetStage : uint32_t {
  kWithin = 0,
  kCoarseStacks = 1,  // new stacks cut to kBudgetStackDepth frames
  kCountingOnly = 2,  // new stacks counted under kOverBudgetFrame
};

// memory_budget_set() sets the budget in bytes (0: none). Runtime init calls it once.
void memory_budget_set(uint64_t max_bytes);
uint64_t memory_budget_max();

extern std::atomic<uint32_t> g_budget_stage;

// memory_budget_stage() is the current stage. Lock-free, signal-safe: one relaxed load.
inline BudgetStage memory_budget_stage() { return static_cast<BudgetStage>(g_budget_stage.load(std::memory_order_relaxed)); }

// memory_budget_observe() raises the stage for `mapped_bytes` of internal memory; the internal
// allocator calls it whenever it maps more.
void memory_budget_observe(size_t mapped_bytes);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_MEMORY_BUDGET_H_
