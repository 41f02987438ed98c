// File: device_section.h
//
// The snapshot's view of device memory (docs/FORMAT.md, DEVICES and INNER_BLOCKS): per device, the
// live bytes of each device domain beside what the driver says is used; and per site of the cuda
// domain, the bytes of c10_cuda blocks that lie inside its blocks, which is what a caching
// allocator's reserve holds in use (the rest of the reserve is cached, free for reuse). Both are
// written whole in every snapshot of a process that has device memory, and not at all otherwise.
#ifndef LEAKSCOPE_CORE_DEVICE_SECTION_H_
#define LEAKSCOPE_CORE_DEVICE_SECTION_H_

#include "core/frame_builder.h"

namespace leakscope::internal {

// write_device_sections() emits DEVICES and INNER_BLOCKS from the device table, for sites below
// `sites_end` (those the stream defines). Runs on the writer; allocates only internal memory; on
// exhaustion it writes what it could gather (the sections are whole states, the next one mends it).
void write_device_sections(FrameBuilder& frame, uint32_t sites_end);

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_DEVICE_SECTION_H_
