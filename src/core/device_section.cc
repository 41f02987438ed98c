#include "core/device_section.h"

#include <algorithm>

#include "core/accelerator.h"
#include "core/device_table.h"
#include "core/internal_alloc.h"
#include "core/triple_registry.h"

namespace leakscope::internal {
namespace {

constexpr int kMaxDevices = 64;

// One device's figures, as DEVICES lists them.
struct DeviceFigures {
  bool seen;
  uint64_t live_bytes[4];  // cuda, cuda_host, cuda_managed, c10_cuda
  uint64_t inner_bytes;    // c10_cuda bytes inside tracked cuda blocks
  uint64_t reserved_bytes; // device address space reserved, not memory
};

// An outer block's address range, for finding the inner blocks inside it.
struct OuterRange {
  uintptr_t begin;
  uintptr_t end;
  TripleId triple;
};

struct InnerFigures {
  uint32_t site;
  uint64_t bytes;
  uint64_t blocks;
};

struct Gathered {
  DeviceFigures devices[kMaxDevices + 1] = {};  // index device + 1: 0 holds blocks of no known device
  InternalArray<OuterRange> outer;
  InternalArray<DeviceBlock> inner;
  bool any = false;
};

int domain_column(Domain domain) {
  switch (domain) {
    case Domain::kCuda: return 0;
    case Domain::kCudaHost: return 1;
    case Domain::kCudaManaged: return 2;
    case Domain::kC10Cuda: return 3;
    default: return -1;
  }
}

void gather(const DeviceBlock* blocks, uint32_t count, void* data) {
  auto* gathered = static_cast<Gathered*>(data);
  for (uint32_t i = 0; i < count; ++i) {
    const DeviceBlock& block = blocks[i];
    int device = block.device >= 0 && block.device < kMaxDevices ? block.device + 1 : 0;
    DeviceFigures& figures = gathered->devices[device];
    figures.seen = true;
    gathered->any = true;
    if (block.kind == DeviceKey::kReservedRange) {
      figures.reserved_bytes += block.size;
      continue;
    }
    int column = domain_column(block.domain);
    if (column >= 0) figures.live_bytes[column] += block.size;
    if (block.kind == DeviceKey::kLayeredAddress) {
      gathered->inner.push_back(block);
    } else if (block.domain == Domain::kCuda && block.begin != 0) {
      gathered->outer.push_back(OuterRange{block.begin, block.begin + block.size, block.triple});
    }
  }
}

// outer_containing() is the outer range holding `address`, or nullptr; `outer` is sorted.
const OuterRange* outer_containing(const InternalArray<OuterRange>& outer, uintptr_t address) {
  const OuterRange* end = outer.data() + outer.size();
  const OuterRange* after = std::upper_bound(outer.data(), end, address,
                                             [](uintptr_t value, const OuterRange& range) { return value < range.begin; });
  if (after == outer.data()) return nullptr;
  const OuterRange* candidate = after - 1;
  return address < candidate->end ? candidate : nullptr;
}

constinit Gathered gathered;  // the writer's alone; set anew for every snapshot

}  // namespace

void write_device_sections(FrameBuilder& frame, uint32_t sites_end) {
  memset(gathered.devices, 0, sizeof(gathered.devices));
  gathered.any = false;
  gathered.outer.clear();
  gathered.inner.clear();
  device_table_visit(gather, &gathered);
  if (!gathered.any) return;

  std::sort(gathered.outer.data(), gathered.outer.data() + gathered.outer.size(),
            [](const OuterRange& a, const OuterRange& b) { return a.begin < b.begin; });
  InternalArray<InnerFigures> by_site;
  for (size_t i = 0; i < gathered.inner.size(); ++i) {
    const DeviceBlock& block = gathered.inner[i];
    int device = block.device >= 0 && block.device < kMaxDevices ? block.device + 1 : 0;
    // A block may span several outer ranges (an expandable segment's chunks): each holds its share.
    uintptr_t block_end = block.begin + block.size;
    bool first = true;
    for (const OuterRange* outer = outer_containing(gathered.outer, block.begin);
         outer != nullptr && outer < gathered.outer.data() + gathered.outer.size() && outer->begin < block_end; ++outer) {
      uintptr_t begin = outer->begin > block.begin ? outer->begin : block.begin;
      uintptr_t end = outer->end < block_end ? outer->end : block_end;
      const TripleEntry* triple = triple_get(outer->triple);
      if (end <= begin || triple == nullptr || triple->site->id >= sites_end) continue;
      gathered.devices[device].inner_bytes += end - begin;
      size_t at = 0;
      while (at < by_site.size() && by_site[at].site != triple->site->id) ++at;
      if (at == by_site.size() && !by_site.push_back(InnerFigures{triple->site->id, 0, 0})) continue;
      by_site[at].bytes += end - begin;
      by_site[at].blocks += first ? 1 : 0;  // a block is counted where it starts
      first = false;
    }
  }

  uint64_t devices = 0;
  for (const DeviceFigures& figures : gathered.devices) devices += figures.seen ? 1 : 0;
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kDevices, devices);
  for (int index = 0; index <= kMaxDevices; ++index) {
    const DeviceFigures& figures = gathered.devices[index];
    if (!figures.seen) continue;
    DeviceMemoryInfo info{0, 0};
    if (index > 0) accelerator_device_memory(index - 1, &info);
    frame.varint(static_cast<uint64_t>(index));  // the device's ordinal + 1; 0: unknown
    for (uint64_t bytes : figures.live_bytes) frame.varint(bytes);
    frame.varint(figures.inner_bytes);
    frame.varint(figures.reserved_bytes);
    frame.varint(info.used_bytes);
    frame.varint(info.total_bytes);
  }
  frame.end_list(mark, devices);

  FrameBuilder::SectionMark inner = frame.begin_list(SectionTag::kInnerBlocks, by_site.size());
  for (size_t i = 0; i < by_site.size(); ++i) {
    frame.varint(by_site[i].site);
    frame.varint(by_site[i].bytes);
    frame.varint(by_site[i].blocks);
  }
  frame.end_list(inner, by_site.size());
  by_site.release();
}

}  // namespace leakscope::internal
