#include "core/reachability.h"

#include "core/radix_sort.h"

namespace leakscope::internal {
namespace {

// Values below this are small integers, not addresses (as LeakSanitizer filters them).
constexpr uintptr_t kLowestPointer = 16 * 1024;

uintptr_t block_end(const ScanBlock& block) { return block.begin + (block.size != 0 ? block.size : 1); }

}  // namespace

void sort_scan_blocks(ScanBlock* blocks, ScanBlock* scratch, size_t count, size_t* counters) {
  radix_sort(blocks, scratch, count, counters, 48, [](const ScanBlock& block) { return block.begin; });
}

ReachabilityScan::ReachabilityScan(ScanBlock* blocks, size_t count, uint32_t* frontier, uintptr_t* begins)
    : blocks_(blocks), count_(count), frontier_(frontier), begins_(begins) {
  for (size_t i = 0; i < count_; ++i) begins_[i] = blocks_[i].begin;
  if (count_ != 0) {
    lowest_ = blocks_[0].begin;
    highest_ = block_end(blocks_[count_ - 1]);
  }
}

size_t ReachabilityScan::find(uintptr_t address) const {
  if (address < lowest_ || address >= highest_) return SIZE_MAX;
  size_t low = 0, high = count_;  // the first block beginning after `address`
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    if (begins_[middle] <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low == 0) return SIZE_MAX;
  const ScanBlock& block = blocks_[low - 1];
  return address < block_end(block) ? low - 1 : SIZE_MAX;
}

void ReachabilityScan::mark(size_t index, size_t from_block) {
  if (index == SIZE_MAX || index == from_block) return;
  ScanBlock& block = blocks_[index];
  if (indirect_pass_) {
    if (block.state == BlockState::kUnreached) block.state = BlockState::kIndirectlyLost;
    return;
  }
  if (block.state != BlockState::kUnreached) return;
  block.state = BlockState::kReachable;
  __builtin_prefetch(reinterpret_cast<const void*>(block.begin));  // scanned soon: the frontier is last in, first out
  frontier_[frontier_size_++] = static_cast<uint32_t>(index);
}

void ReachabilityScan::mark_reachable(size_t index) {
  if (blocks_[index].state != BlockState::kUnreached) return;
  blocks_[index].state = BlockState::kReachable;
  frontier_[frontier_size_++] = static_cast<uint32_t>(index);
}

void ReachabilityScan::scan_words(uintptr_t begin, uintptr_t end, size_t from_block, bool allocator_data) {
  uintptr_t word = (begin + 7) & ~uintptr_t{7};
  for (; word + 8 <= end; word += 8) {
    uintptr_t value = *reinterpret_cast<const uintptr_t*>(word);
    if (value < kLowestPointer || value < lowest_ || value >= highest_) continue;
    size_t index = find(value);
    // The next chunk's header is at least 16 bytes past the block's start (glibc's smallest chunk is 32).
    if (allocator_data && index != SIZE_MAX && value % 16 == 0 && value >= blocks_[index].begin + 16 &&
        value + 8 >= blocks_[index].begin + blocks_[index].size) {
      continue;
    }
    mark(index, from_block);
  }
}

void ReachabilityScan::scan_root(uintptr_t begin, uintptr_t end, bool allocator_data) {
  if (end <= begin) return;
  root_bytes_ += end - begin;
  scan_words(begin, end, SIZE_MAX, allocator_data);
}

void ReachabilityScan::flood() {
  while (frontier_size_ != 0) {
    size_t index = frontier_[--frontier_size_];
    const ScanBlock& block = blocks_[index];
    if (block.readable) scan_words(block.begin, block.begin + block.size, index, false);
  }
}

void ReachabilityScan::classify_lost() {
  indirect_pass_ = true;
  for (size_t index = 0; index < count_; ++index) {
    const ScanBlock& block = blocks_[index];
    if (block.state != BlockState::kReachable && block.readable) scan_words(block.begin, block.begin + block.size, index, false);
  }
}

}  // namespace leakscope::internal
