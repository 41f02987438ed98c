#include "core/leak_check.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "core/alloc_table.h"
#include "core/deferred_records.h"
#include "core/interval_map.h"
#include "core/process_maps.h"
#include "core/radix_sort.h"
#include "core/reachability.h"
#include "core/spin_lock.h"
#include "core/stack_depot.h"
#include "core/triple_registry.h"
#include "core/sys.h"
#include "core/world_stop.h"

namespace leakscope::internal {
namespace {

struct Range {
  uintptr_t begin;
  uintptr_t end;
};

SpinLock g_roots_lock;
Range g_root_regions[kMaxRootRegions];
size_t g_root_region_count = 0;

// A mapped array of a fixed capacity, for memory used while the program's threads are paused.
template <typename T>
struct Mapped {
  T* items = nullptr;
  size_t capacity = 0;
  size_t bytes = 0;

  bool map(size_t count) {
    capacity = count;
    bytes = (count != 0 ? count : 1) * sizeof(T);
    bytes = (bytes + sys::page_size() - 1) & ~(sys::page_size() - 1);
    items = static_cast<T*>(sys::map_anonymous(bytes));
    return items != nullptr;
  }
  void unmap() {
    if (items != nullptr) sys::unmap(items, bytes);
    items = nullptr;
    capacity = bytes = 0;
  }
};

// glibc's static TLS figures (GLIBC_PRIVATE, read once): the size of the static TLS area
// including the TCB, and the TCB's size (struct pthread), which sits at the thread pointer with
// the TLS blocks below it.
struct StaticTls {
  bool known = false;
  size_t size = 0;
  size_t tcb_size = 0;
};

StaticTls read_static_tls() {
  StaticTls tls;
  auto get_info = reinterpret_cast<void (*)(size_t*, size_t*)>(dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info"));
  auto* pthread_size = static_cast<const unsigned int*>(dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread"));
  if (get_info == nullptr || pthread_size == nullptr) return tls;
  size_t align = 0;
  get_info(&tls.size, &align);
  tls.tcb_size = *pthread_size;
  tls.known = tls.size > tls.tcb_size;
  return tls;
}

struct ModuleSegment {
  Range range;
  bool allocator_data;  // libc's: glibc's arenas
};

constexpr size_t kMaxModuleSegments = 16384;

// Everything the check gathers before the threads are paused, and what it builds while they are.
struct Scan {
  const LeakCheckRequest* request;
  LeakCheckResult* result;
  StaticTls tls;
  Range root_regions[kMaxRootRegions];
  size_t root_region_count;
  Mapped<Range> mappings;  // the program's mmap'd memory (mmap_roots)
  size_t mapping_count;
  Mapped<ModuleSegment> segments;
  size_t segment_count;
  Mapped<uint64_t> from_loader;  // bit per triple id: its blocks were allocated by the dynamic loader
  uint32_t from_loader_end;
  bool ok;
};

// find_loader_code() finds the dynamic loader's executable segment.
int find_loader_code(struct dl_phdr_info* info, size_t, void* context) {
  auto* code = static_cast<Range*>(context);
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const char* slash = strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  if (strncmp(base, "ld-linux", 8) != 0 && strncmp(base, "ld.so", 5) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
    code->begin = info->dlpi_addr + header.p_vaddr;
    code->end = code->begin + header.p_memsz;
    return 1;
  }
  return 0;
}

// note_loader_triples() sets the bit of every triple whose allocations the dynamic loader made
// (their innermost frame is in its code): thread vectors (DTVs), dlopen'd modules' TLS, link maps.
// The loader keeps some of them where no scan looks -- the TCB of an exited thread, in the stack
// glibc keeps cached -- so they count as reachable, as LeakSanitizer counts them.
bool note_loader_triples(Scan* scan) {
  Range code{0, 0};
  dl_iterate_phdr(find_loader_code, &code);
  scan->from_loader_end = triple_end_id();
  if (!scan->from_loader.map((scan->from_loader_end + 63) / 64)) return false;
  if (code.end == 0) return true;
  for (uint32_t id = 1; id < scan->from_loader_end; ++id) {
    const TripleEntry* triple = triple_get(static_cast<TripleId>(id));
    const StackEntry* stack = triple != nullptr ? depot_get(triple->site->stack) : nullptr;
    if (stack == nullptr || stack->depth == 0) continue;
    uintptr_t innermost = stack->head[0];
    if (innermost >= code.begin && innermost < code.end) scan->from_loader.items[id / 64] |= uint64_t{1} << (id % 64);
  }
  return true;
}

bool made_by_loader(const Scan& scan, uint32_t triple) {
  return triple < scan.from_loader_end && (scan.from_loader.items[triple / 64] >> (triple % 64) & 1) != 0;
}

void copy_interval(const Interval* intervals, uint32_t count, void* context) {
  auto* scan = static_cast<Scan*>(context);
  // Reserved ranges too: glibc maps a thread's stack PROT_NONE and then opens it up (the mappings
  // read while the threads are paused say what is readable now).
  for (uint32_t i = 0; i < count; ++i) {
    if (scan->mapping_count < scan->mappings.capacity) {
      scan->mappings.items[scan->mapping_count++] = {intervals[i].begin, intervals[i].end};
    }
  }
}

void count_intervals(const Interval*, uint32_t count, void* context) { *static_cast<size_t*>(context) += count; }

// collect_segment() lists a module's writable segments, leakscope's own excepted: its tables
// point at every block.
int collect_segments(struct dl_phdr_info* info, size_t, void* context) {
  auto* scan = static_cast<Scan*>(context);
  auto own = reinterpret_cast<uintptr_t>(&g_root_region_count);
  bool ours = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    if (header.p_type == PT_LOAD && own >= begin && own < begin + header.p_memsz) ours = true;
  }
  if (ours) return 0;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const char* slash = strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  bool libc = strncmp(base, "libc.so", 7) == 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_W) == 0 || header.p_memsz == 0) continue;
    if (scan->segment_count == scan->segments.capacity) break;
    uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    scan->segments.items[scan->segment_count++] = {{begin, begin + header.p_memsz}, libc};
  }
  return 0;
}

struct BlockCopy {
  ScanBlock* blocks;
  size_t capacity;
  size_t count;
  uint64_t bytes;
};

void copy_blocks(const AllocRecord* records, uint32_t count, void* context) {
  auto* copy = static_cast<BlockCopy*>(context);
  for (uint32_t i = 0; i < count && copy->count < copy->capacity; ++i) {
    copy->blocks[copy->count++] = {records[i].pointer, records[i].size, raw(records[i].triple), BlockState::kUnreached, false};
    copy->bytes += records[i].size;
  }
}

// mark_readable() sets each block's `readable`: whether it lies in readable mappings (a program
// may protect memory it allocated). Both lists are in address order.
void mark_readable(ScanBlock* blocks, size_t count, const ProcessMaps& maps) {
  const Mapping* mapping = maps.begin();
  for (size_t i = 0; i < count; ++i) {
    ScanBlock& block = blocks[i];
    uintptr_t end = block.begin + block.size;
    while (mapping != maps.end() && mapping->end <= block.begin) ++mapping;
    uintptr_t covered = block.begin;
    for (const Mapping* m = mapping; m != maps.end() && covered < end; ++m) {
      if (m->begin > covered || !m->readable) break;
      covered = m->end;
    }
    block.readable = covered >= end;
  }
}

// scan_readable() scans the parts of [begin, end) that are mapped readable.
void scan_readable(ReachabilityScan& marking, const ProcessMaps& maps, uintptr_t begin, uintptr_t end, bool allocator_data) {
  for (const Mapping* mapping = maps.first_ending_after(begin); mapping != maps.end() && mapping->begin < end; ++mapping) {
    if (!mapping->readable) continue;
    uintptr_t from = mapping->begin > begin ? mapping->begin : begin;
    marking.scan_root(from, mapping->end < end ? mapping->end : end, allocator_data);
  }
}

// Where a thread's stack ends: the top of the mapping its stack pointer is in, or, for a thread
// whose TCB is in that mapping (glibc puts it at the top of the stacks it allocates), just past the
// TCB, so that a mapping merged with the one above it is not scanned beyond the stack.
Range stack_range(uintptr_t stack_pointer, uintptr_t thread_pointer, const StaticTls& tls, const ProcessMaps& maps,
                  const ReachabilityScan& marking, const ScanBlock* blocks) {
  size_t block = marking.find(stack_pointer);
  if (block != SIZE_MAX) return {stack_pointer, blocks[block].begin + blocks[block].size};  // a stack the program allocated
  const Mapping* mapping = maps.find(stack_pointer);
  if (mapping == nullptr || !mapping->readable) return {0, 0};
  uintptr_t end = mapping->end;
  if (thread_pointer > stack_pointer && thread_pointer < mapping->end) {
    size_t page = sys::page_size();
    uintptr_t past_tcb = (thread_pointer + (tls.tcb_size != 0 ? tls.tcb_size : page) + page - 1) & ~(page - 1);
    if (past_tcb < end) end = past_tcb;
  }
  return {stack_pointer, end};
}

// scan_thread_tls() scans a thread's static TLS (with its TCB) and its DTV, which points to the
// TLS blocks of dlopen'd modules (blocks malloc'd on first use).
void scan_thread_tls(ReachabilityScan& marking, const ProcessMaps& maps, uintptr_t thread_pointer, const StaticTls& tls) {
  if (thread_pointer == 0) return;
  if (tls.known) scan_readable(marking, maps, thread_pointer + tls.tcb_size - tls.size, thread_pointer + tls.tcb_size, false);
  const Mapping* tcb = maps.find(thread_pointer);
  if (tcb == nullptr || !tcb->readable || thread_pointer + 16 > tcb->end) return;
  uintptr_t dtv = reinterpret_cast<const uintptr_t*>(thread_pointer)[1];
  const Mapping* table = maps.find(dtv - 16);
  if (dtv < 16 || table == nullptr || !table->readable || dtv > table->end) return;
  uint64_t entries = reinterpret_cast<const uint64_t*>(dtv)[-2];  // dtv[-1].counter
  if (entries > (1u << 16)) return;
  scan_readable(marking, maps, dtv - 16, dtv + 16 * (entries + 1), false);
}

bool inside_any_stack(const Range& range, const Range* stacks, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (stacks[i].begin < range.end && range.begin < stacks[i].end) return true;
  }
  return false;
}

// sum_lost() sums the lost blocks per triple, in triple id order: a slot number per triple id that
// lost something (4 bytes per triple), then one entry per such triple.
void sum_lost(const ScanBlock* blocks, size_t count, LeakCheckResult* result) {
  uint32_t triples_end = 0;
  bool any = false;
  for (size_t i = 0; i < count; ++i) {
    if (blocks[i].state == BlockState::kReachable) continue;
    any = true;
    if (blocks[i].triple >= triples_end) triples_end = blocks[i].triple + 1;
  }
  if (!any) return;
  Mapped<uint32_t> slot_of;
  if (!slot_of.map(triples_end)) return;
  for (size_t i = 0; i < count; ++i) {
    if (blocks[i].state != BlockState::kReachable) slot_of.items[blocks[i].triple] = 1;
  }
  uint32_t distinct = 0;
  for (uint32_t triple = 0; triple < triples_end; ++triple) {
    if (slot_of.items[triple] != 0) slot_of.items[triple] = ++distinct;
  }
  Mapped<LostInTriple> entries;
  if (!entries.map(distinct)) {
    slot_of.unmap();
    return;
  }
  for (uint32_t triple = 0; triple < triples_end; ++triple) {
    if (slot_of.items[triple] != 0) entries.items[slot_of.items[triple] - 1].triple = triple;
  }
  for (size_t i = 0; i < count; ++i) {
    const ScanBlock& block = blocks[i];
    if (block.state == BlockState::kReachable) continue;
    LostInTriple& entry = entries.items[slot_of.items[block.triple] - 1];
    if (block.state == BlockState::kUnreached) {
      entry.bytes += block.size;
      ++entry.blocks;
      result->lost_bytes += block.size;
    } else {
      entry.indirect_bytes += block.size;
      ++entry.indirect_blocks;
      result->indirectly_lost_bytes += block.size;
    }
  }
  result->memory_bytes += slot_of.bytes + entries.bytes;
  slot_of.unmap();
  result->lost = entries.items;
  result->lost_count = distinct;
  result->lost_mapped = entries.bytes;
}

// drop_ending() and drop_pending_ends() take out of the blocks (sorted by address) those a queued record ends:
// freed before the program was paused, they are no one's to lose.
void drop_ending(const DeferredRecord& record, void* context) {
  if (record.kind != DeferredKind::kFree) return;
  uintptr_t pointer = record.pointer;
  auto* copy = static_cast<BlockCopy*>(context);
  size_t low = 0, high = copy->count;
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    if (copy->blocks[middle].begin < pointer) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low < copy->count && copy->blocks[low].begin == pointer) copy->blocks[low].state = BlockState::kFreedBeforeScan;
}

void drop_pending_ends(BlockCopy* copy) {
  if (deferred_records_pending() == 0) return;
  deferred_records_visit_pending(drop_ending, copy);
  size_t kept = 0;
  for (size_t i = 0; i < copy->count; ++i) {
    if (copy->blocks[i].state == BlockState::kFreedBeforeScan) {
      copy->bytes -= copy->blocks[i].size;
      continue;
    }
    copy->blocks[kept++] = copy->blocks[i];
  }
  copy->count = kept;
}

// What else is queued (deferred_records.h) is read as it stands, so that nothing only it holds
// reads as lost: a block made, whose record is still queued, is read as a root; a block being
// resized (taken, its outcome queued or not made yet) is reachable, its bytes read.
struct PendingScan {
  ReachabilityScan* marking;
  const ProcessMaps* maps;
};

void scan_pending(const DeferredRecord& record, void* context) {
  auto* pending = static_cast<PendingScan*>(context);
  if (record.kind == DeferredKind::kAlloc) {
    scan_readable(*pending->marking, *pending->maps, record.pointer, record.pointer + record.size, false);
  } else if (record.kind == DeferredKind::kTake) {
    size_t block = pending->marking->find(record.pointer);
    if (block != SIZE_MAX) pending->marking->mark_reachable(block);
  }
}

// scan_paused() runs with the loader's lock held: the check proper.
int scan_paused(struct dl_phdr_info*, size_t, void* context) {
  auto* scan = static_cast<Scan*>(context);
  LeakCheckResult* result = scan->result;
  dl_iterate_phdr(collect_segments, scan);  // the loader's lock is recursive
  // What is queued is applied now, while a lock may still be taken; what is queued after, until
  // the program is paused, is read as it stands (drop_pending_ends(), scan_pending()).
  deferred_records_settle();
  alloc_table_lock_all();
  StoppedWorld world;
  if (!world_stop(scan->request->stop_signal, scan->request->leave_running, &world)) {
    alloc_table_unlock_all();
    return 1;
  }
  uint64_t live = alloc_table_live_blocks();
  Mapped<ScanBlock> blocks, scratch;
  Mapped<uint32_t> frontier;
  Mapped<size_t> counters;
  ProcessMaps maps;
  bool mapped = blocks.map(live) && scratch.map(live) && frontier.map(live) && counters.map(kRadixCounters) && maps.read();
  if (mapped) {
    BlockCopy copy{blocks.items, blocks.capacity, 0, 0};
    alloc_table_visit_locked(copy_blocks, &copy);
    sort_scan_blocks(blocks.items, scratch.items, copy.count, counters.items);
    drop_pending_ends(&copy);
    size_t scratch_bytes = scratch.bytes;
    mark_readable(blocks.items, copy.count, maps);
    // The sort's scratch (24 bytes a block) holds the packed starts now.
    ReachabilityScan marking(blocks.items, copy.count, frontier.items, reinterpret_cast<uintptr_t*>(scratch.items));
    for (size_t i = 0; i < copy.count; ++i) {
      if (made_by_loader(*scan, blocks.items[i].triple)) marking.mark_reachable(i);
    }

    for (size_t i = 0; i < scan->segment_count; ++i) {
      const ModuleSegment& segment = scan->segments.items[i];
      scan_readable(marking, maps, segment.range.begin, segment.range.end, segment.allocator_data);
    }
    Mapped<Range> stacks;
    stacks.map(world.count + 1);
    size_t stack_count = 0;
    auto add_stack = [&](Range stack) {
      if (stack.end <= stack.begin) return;
      scan_readable(marking, maps, stack.begin, stack.end, false);
      if (stack_count < stacks.capacity) stacks.items[stack_count++] = stack;
    };
    uint32_t paused = 0;
    for (uint32_t i = 0; i < world.count; ++i) {
      const PausedThread& thread = world.threads[i];
      uint32_t state = __atomic_load_n(&thread.state, __ATOMIC_ACQUIRE);
      if (state == static_cast<uint32_t>(PausedState::kSignalled) && thread.waiting_stack_pointer != 0) {
        // Not paused, but waiting in the kernel: its stack, up to the top of its mapping (for a
        // thread glibc started, its TLS and TCB with it); its registers are beyond reach.
        add_stack(stack_range(thread.waiting_stack_pointer, 0, scan->tls, maps, marking, blocks.items));
        ++result->threads_scanned_waiting;
        continue;
      }
      if (state != static_cast<uint32_t>(PausedState::kPaused)) continue;
      ++paused;
      marking.scan_root(reinterpret_cast<uintptr_t>(thread.registers),
                        reinterpret_cast<uintptr_t>(thread.registers + kSavedRegisterWords));
      add_stack(stack_range(thread.stack_pointer, thread.thread_pointer, scan->tls, maps, marking, blocks.items));
      scan_thread_tls(marking, maps, thread.thread_pointer, scan->tls);
    }
    if (const ProgramContext* program = scan->request->program; program != nullptr) {
      ++paused;
      uintptr_t self_tp;
      asm volatile("mov %%fs:0, %0" : "=r"(self_tp));
      marking.scan_root(reinterpret_cast<uintptr_t>(program->registers),
                        reinterpret_cast<uintptr_t>(program->registers + 6));
      add_stack(stack_range(program->stack_from, self_tp, scan->tls, maps, marking, blocks.items));
      scan_thread_tls(marking, maps, self_tp, scan->tls);
    }
    for (size_t i = 0; i < scan->root_region_count; ++i) {
      scan_readable(marking, maps, scan->root_regions[i].begin, scan->root_regions[i].end, false);
    }
    PendingScan pending{&marking, &maps};
    deferred_records_visit_pending(scan_pending, &pending);
    for (size_t i = 0; i < scan->mapping_count; ++i) {
      const Range& region = scan->mappings.items[i];
      if (!inside_any_stack(region, stacks.items, stack_count)) scan_readable(marking, maps, region.begin, region.end, false);
    }
    marking.flood();
    marking.classify_lost();

    result->threads_paused = paused;
    result->threads_missed = world.missed;
    result->blocks = copy.count;
    result->bytes = copy.bytes;
    result->root_bytes = marking.root_bytes();
    result->memory_bytes = blocks.bytes + frontier.bytes + counters.bytes + maps.mapped_bytes() + world.mapped_bytes +
                           scan->mappings.bytes + scan->segments.bytes + scan->from_loader.bytes + scratch_bytes +
                           stacks.bytes;
    stacks.unmap();
    scratch.unmap();
    frontier.unmap();
    counters.unmap();
    maps.release();
    result->stopped_at_ns = world.stopped_at_ns;
    world_resume(&world);
    alloc_table_unlock_all();
    result->stopped_ns = sys::monotonic_ns() - result->stopped_at_ns;
    sum_lost(blocks.items, copy.count, result);
    scan->ok = true;
  } else {
    world_resume(&world);
    alloc_table_unlock_all();
  }
  blocks.unmap();
  scratch.unmap();
  frontier.unmap();
  counters.unmap();
  return 1;
}

}  // namespace

bool leak_check_run(const LeakCheckRequest& request, LeakCheckResult* result) {
  *result = LeakCheckResult{};
  result->trigger = request.trigger;
  if (request.mmap_roots) result->flags |= kLeakCheckMmapRoots;
  static Scan scan;  // one check at a time: the snapshot lock
  scan = Scan{};
  scan.request = &request;
  scan.result = result;
  scan.tls = read_static_tls();
  {
    SpinLockGuard guard(g_roots_lock);
    scan.root_region_count = g_root_region_count;
    memcpy(scan.root_regions, g_root_regions, g_root_region_count * sizeof(Range));
  }
  bool ok = scan.segments.map(kMaxModuleSegments) && note_loader_triples(&scan);
  if (ok && request.mmap_roots) {
    size_t intervals = 0;
    interval_map_visit(count_intervals, &intervals);
    ok = scan.mappings.map(intervals + 64);
    if (ok) interval_map_visit(copy_interval, &scan);
  }
  if (ok) dl_iterate_phdr(scan_paused, &scan);
  scan.segments.unmap();
  scan.mappings.unmap();
  scan.from_loader.unmap();
  if (!scan.ok) leak_check_release(result);
  return scan.ok;
}

void leak_check_release(LeakCheckResult* result) {
  if (result->lost != nullptr) sys::unmap(result->lost, result->lost_mapped);
  result->lost = nullptr;
  result->lost_count = 0;
  result->lost_mapped = 0;
}

bool leak_check_register_root(uintptr_t begin, size_t size) {
  if (size == 0 || begin + size < begin) return false;
  SpinLockGuard guard(g_roots_lock);
  if (g_root_region_count == kMaxRootRegions) return false;
  g_root_regions[g_root_region_count++] = {begin, begin + size};
  return true;
}

bool leak_check_unregister_root(uintptr_t begin, size_t size) {
  SpinLockGuard guard(g_roots_lock);
  for (size_t i = 0; i < g_root_region_count; ++i) {
    if (g_root_regions[i].begin == begin && g_root_regions[i].end == begin + size) {
      g_root_regions[i] = g_root_regions[--g_root_region_count];
      return true;
    }
  }
  return false;
}

}  // namespace leakscope::internal
