// File: epoch.h
//
// The current epoch: the index of the snapshot interval now in progress. Hooks stamp each new
// block with it; the snapshot writer closes an epoch by advancing it before it reads the tables.
#ifndef LEAKSCOPE_CORE_EPOCH_H_
#define LEAKSCOPE_CORE_EPOCH_H_

#include <atomic>

#include "core/types.h"

namespace leakscope::internal {

inline constinit std::atomic<uint32_t> g_epoch{0};

inline Epoch epoch_current() { return static_cast<Epoch>(g_epoch.load(std::memory_order_relaxed)); }

// epoch_close() ends the current epoch and returns it. Only the snapshot writer calls it.
inline Epoch epoch_close() { return static_cast<Epoch>(g_epoch.fetch_add(1, std::memory_order_relaxed)); }

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_EPOCH_H_
