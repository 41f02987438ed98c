#include "core/memory_budget.h"

namespace leakscope::internal {
namespace {

constinit std::atomic<uint64_t> g_max_bytes{0};

}  // namespace

constinit std::atomic<uint32_t> g_budget_stage{0};

void memory_budget_set(uint64_t max_bytes) { g_max_bytes.store(max_bytes, std::memory_order_relaxed); }

uint64_t memory_budget_max() { return g_max_bytes.load(std::memory_order_relaxed); }

void memory_budget_observe(size_t mapped_bytes) {
  uint64_t max = g_max_bytes.load(std::memory_order_relaxed);
  if (max == 0) return;
  uint32_t stage = mapped_bytes >= max                ? static_cast<uint32_t>(BudgetStage::kCountingOnly)
                   : mapped_bytes >= max - max / 8    ? static_cast<uint32_t>(BudgetStage::kCoarseStacks)
                                                      : static_cast<uint32_t>(BudgetStage::kWithin);
  uint32_t current = g_budget_stage.load(std::memory_order_relaxed);
  while (stage > current && !g_budget_stage.compare_exchange_weak(current, stage, std::memory_order_relaxed)) {
  }
}

}  // namespace leakscope::internal
