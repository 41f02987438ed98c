#include "core/snapshot_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


#include "core/accelerator.h"
#include "core/alloc_table.h"
#include "core/checksum.h"
#include "core/epoch.h"
#include "core/frame_builder.h"
#include "core/deferred_records.h"
#include "core/device_section.h"
#include "core/device_table.h"
#include "core/intern_table.h"
#include "core/internal_alloc.h"
#include "core/interpreter.h"
#include "core/interval_map.h"
#include "core/leak_check.h"
#include "core/memory_budget.h"
#include "core/module_map.h"
#include "core/parked_blocks.h"
#include "core/proc_stats.h"
#include "core/recorder.h"
#include "core/sampler.h"
#include "core/stack_depot.h"
#include "core/stack_node_tree.h"
#include "core/sys.h"
#include "core/task_registry.h"
#include "core/thread_registry.h"
#include "core/triple_registry.h"

#ifndef LEAKSCOPE_VERSION
#define LEAKSCOPE_VERSION "0.0.0"
#endif

namespace leakscope::internal {
namespace {

// BirthMap: live bytes and blocks per (triple, birth epoch), open addressing, key 0 = empty.
struct BirthCell {
  uint64_t key;  // triple << 32 | epoch
  int64_t bytes;
  int64_t blocks;
};

class BirthMap {
 public:
  bool add(uint64_t key, int64_t bytes, int64_t blocks) {
    if ((count_ + 1) * 2 > cells_.size() && !grow()) return false;
    BirthCell* cell = locate(key);
    if (cell->key == 0) {
      cell->key = key;
      ++count_;
    }
    cell->bytes += bytes;
    cell->blocks += blocks;
    return true;
  }

  // prefetch() starts loading the cell `key` would be added to.
  void prefetch(uint64_t key) const {
    if (cells_.size() != 0) __builtin_prefetch(&cells_[hash(key) & (cells_.size() - 1)], 1);
  }

  BirthCell* find(uint64_t key) {
    if (cells_.size() == 0) return nullptr;
    BirthCell* cell = locate(key);
    return cell->key == 0 ? nullptr : cell;
  }

  void clear() {
    if (cells_.size() != 0) memset(cells_.data(), 0, cells_.size() * sizeof(BirthCell));
    count_ = 0;
  }

  BirthCell* begin() { return cells_.data(); }
  BirthCell* end() { return cells_.data() + cells_.size(); }
  size_t count() const { return count_; }
  void release() {
    cells_.release();
    count_ = 0;
  }
  void swap(BirthMap& other) {
    cells_.swap(other.cells_);
    size_t count = count_;
    count_ = other.count_;
    other.count_ = count;
  }

 private:
  BirthCell* locate(uint64_t key) {
    size_t mask = cells_.size() - 1;
    for (size_t slot = hash(key) & mask;; slot = (slot + 1) & mask) {
      BirthCell& cell = cells_[slot];
      if (cell.key == key || cell.key == 0) return &cell;
    }
  }

  // Keys are a triple id above an epoch: a multiply alone left a small map's slots to the epoch's
  // bits, and every site's cells of one epoch probed through one run of them.
  static size_t hash(uint64_t key) { return static_cast<size_t>(hash_mix(key)); }

  bool grow() {
    InternalArray<BirthCell> old;
    old.swap(cells_);
    size_t capacity = old.size() == 0 ? 1024 : old.size() * 2;
    if (!cells_.resize(capacity)) {
      old.swap(cells_);
      return false;
    }
    count_ = 0;
    for (size_t i = 0; i < old.size(); ++i) {
      if (old[i].key != 0) add(old[i].key, old[i].bytes, old[i].blocks);
    }
    old.release();
    return true;
  }

  InternalArray<BirthCell> cells_;
  size_t count_ = 0;
};

struct EmittedCounters {
  uint64_t alloc_count, alloc_bytes, free_count, free_bytes, split_count;
};

// What the stream last said of the thread in a slot.
constexpr uint32_t kReleasedSlotSaid = UINT32_MAX;  // the incarnation said of a slot found released
struct EmittedThread {
  uint32_t incarnation;  // 0: nothing said of this slot yet
  pid_t tid;
  bool exited;
  char name[kGivenThreadNameSize];
};

struct LifetimeBytes {
  uint64_t bytes[kLifetimeBuckets];
};

// How far a stream's definitions reach (ids of each kind below these are defined), for what a
// forked child takes from its parent's stream.
struct DefinitionEnds {
  uint32_t stacks = 1;
  uint32_t stack_nodes = 1;
  uint32_t sites = 1;
  uint32_t triples = 1;
  uint32_t tasks = 1;
  uint32_t codes = 1;
  uint32_t modules = 0;
};

struct WriterState {
  int fd = -1;
  const char* path = nullptr;  // owned by the runtime, stable for the process's life
  char absolute_path[kMaxPathLength] = {};  // `path` from the root, for a forked child's process frame
  // Of a forked child: its parent's stream, the snapshots it held at the fork, and the definitions
  // they hold, which this stream's snapshots (keys too) do not repeat. An empty path: none.
  char parent_path[kMaxPathLength] = {};
  uint64_t parent_snapshots = 0;
  DefinitionEnds inherited;
  uint64_t file_device = 0;
  uint64_t file_inode = 0;
  uint64_t start_monotonic_ns = 0;
  uint32_t stacks_end = 1;
  uint32_t stack_nodes_end = 1;
  uint32_t sites_end = 1;
  uint32_t triples_end = 1;
  uint32_t tasks_end = 1;
  uint32_t codes_end = 1;
  uint32_t modules_end = 0;
  InternalArray<uint8_t> module_unload_emitted;
  InternalArray<EmittedThread> threads;  // by slot
  InternalArray<EmittedCounters> counters;
  int64_t host_heap_bytes = 0;  // the counters' heap and c10_cpu bytes, as last emitted
  InternalArray<uint32_t> site_slot;  // write_lifetimes(): site id -> its slot + 1, 0 between uses
  // The depot's stack tails as nodes. Kept for the process's life, across key snapshots and into
  // forked children, like the depot it mirrors: a new stream only says the nodes again.
  StackNodeTree tail_nodes;
  InternalArray<uint32_t> node_of_tail;  // StackTail id -> its node, 0 until first needed
  // Live bytes and blocks per (triple, birth epoch) as last emitted, and the scratch map of the
  // values cells had before this snapshot recomputed them (write_births()).
  BirthMap births;
  BirthMap births_before;
  // Cells from this epoch on are recomputed at the next snapshot (the last scan did not count
  // them); 0 recomputes every cell.
  uint32_t births_fresh_from = 0;
  uint32_t births_triples_end = 1;  // triples at or past it are new since the last scan
  InternalArray<uint64_t> births_dirty;  // bit per triple id: recompute all its cells
  FrameBuilder frame;
  bool births_incomplete = false;
  // Key snapshots (stream_format.h): how many snapshots and bytes since the last, its size, and the
  // bytes of definitions since (which the next key repeats).
  uint64_t snapshots_written = 0;
  uint32_t snapshots_since_key = 0;
  uint64_t bytes_since_key = 0;
  uint64_t last_key_bytes = 0;
  uint64_t definition_bytes_since_key = 0;
};

constinit WriterState g_writer;

uint64_t birth_key(TripleId triple, Epoch birth) { return static_cast<uint64_t>(raw(triple)) << 32 | raw(birth); }

// recompute_cell() tells whether the cell `key` (see birth_key()) is recomputed from the tables at
// this snapshot; every other cell stays as last emitted.
bool recompute_cell(uint64_t key) {
  uint32_t triple = static_cast<uint32_t>(key >> 32), birth = static_cast<uint32_t>(key);
  return birth >= g_writer.births_fresh_from || (g_writer.births_dirty[triple >> 6] >> (triple & 63) & 1) != 0;
}

// A scan counts the blocks born up to the epoch the snapshot closes, not those born while it is
// taken: they are counted at the next snapshot, after the threads that made them are in the stream.
struct ScanContext {
  uint32_t triples_end;
  uint32_t closed;
};

// The records of a batch lie in address order and their cells anywhere in the map: the cells
// are all asked for first, so that their loads overlap, then added to.
void scan_heap(const AllocRecord* records, uint32_t count, void* data) {
  auto* scan = static_cast<ScanContext*>(data);
  constexpr uint32_t kAtOnce = 64;
  uint64_t keys[kAtOnce];
  uint8_t counted[kAtOnce];  // each one's place in the run
  for (uint32_t from = 0; from < count; from += kAtOnce) {
    const AllocRecord* run = records + from;
    uint32_t length = count - from < kAtOnce ? count - from : kAtOnce;
    uint32_t wanted = 0;
    for (uint32_t i = 0; i < length; ++i) {
      const AllocRecord& record = run[i];
      uint64_t key = birth_key(record.triple, record.birth);
      if (raw(record.triple) >= scan->triples_end || raw(record.birth) > scan->closed || !recompute_cell(key)) {
        continue;
      }
      g_writer.births.prefetch(key);
      keys[wanted] = key;
      counted[wanted++] = static_cast<uint8_t>(i);
    }
    for (uint32_t i = 0; i < wanted; ++i) {
      const AllocRecord& record = run[counted[i]];
      SampleWeight weight = sample_weight(record.size, record.pointer);
      if (!g_writer.births.add(keys[i], static_cast<int64_t>(weight.bytes), static_cast<int64_t>(weight.blocks))) {
        g_writer.births_incomplete = true;
      }
    }
  }
}

void scan_intervals(const Interval* intervals, uint32_t count, void* data) {
  auto* scan = static_cast<ScanContext*>(data);
  for (uint32_t i = 0; i < count; ++i) {
    const Interval& interval = intervals[i];
    if (interval.triple == kReservedRange) continue;  // address space, not memory
    uint64_t key = birth_key(interval.triple, interval.birth);
    if (raw(interval.triple) >= scan->triples_end || raw(interval.birth) > scan->closed || !recompute_cell(key)) {
      continue;
    }
    if (!g_writer.births.add(key, static_cast<int64_t>(interval.end - interval.begin), 1)) {
      g_writer.births_incomplete = true;
    }
  }
}

void scan_device_blocks(const DeviceBlock* blocks, uint32_t count, void* data) {
  auto* scan = static_cast<ScanContext*>(data);
  for (uint32_t i = 0; i < count; ++i) {
    const DeviceBlock& block = blocks[i];
    if (block.kind == DeviceKey::kReservedRange) continue;  // address space, not memory
    uint64_t key = birth_key(block.triple, block.birth);
    if (raw(block.triple) >= scan->triples_end || raw(block.birth) > scan->closed || !recompute_cell(key)) continue;
    if (!g_writer.births.add(key, static_cast<int64_t>(block.size), 1)) g_writer.births_incomplete = true;
  }
}

void write_info(FrameBuilder& frame, Epoch closed, SnapshotReason reason, int signal_number, bool final,
                uint64_t host_heap_bytes) {
  ProcStats stats;
  proc_stats_read(&stats, final);
  FrameBuilder::SectionMark mark = frame.begin_record(SectionTag::kInfo);
  frame.varint(raw(closed));
  frame.varint(sys::monotonic_ns() - g_writer.start_monotonic_ns);
  frame.varint(sys::realtime_ns());
  frame.varint(static_cast<uint64_t>(reason));
  frame.varint(static_cast<uint64_t>(signal_number));
  frame.varint(final ? 1 : 0);
  frame.varint(stats.rss_bytes);
  frame.varint(stats.pss_bytes);
  frame.varint(stats.anon_bytes);
  frame.varint(stats.file_bytes);
  frame.varint(stats.shmem_bytes);
  frame.varint(stats.swap_bytes);
  frame.varint(stats.hwm_bytes);
  frame.varint(internal_mapped_bytes());
  frame.varint(alloc_table_live_blocks());
  frame.varint(recorder_reserved_bytes());
  frame.varint(static_cast<uint64_t>(memory_budget_stage()));
  frame.varint(internal_peak_mapped_bytes());
  frame.varint(static_cast<uint64_t>(accelerator_device_tracking()));
  frame.varint(parked_blocks_count());
  frame.varint(host_heap_bytes);
  frame.end_record(mark);
}

// write_interpreted_code() emits the interpreted code that stacks name and the stream does not
// hold yet (interpreter.h).
void write_interpreted_code(FrameBuilder& frame, uint32_t codes_end) {
  if (codes_end <= g_writer.codes_end) return;
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kInterpretedCode, codes_end - g_writer.codes_end);
  for (uint32_t id = g_writer.codes_end; id < codes_end; ++id) {
    InterpretedCode code{};  // every id below the end is published; empty only if that ever fails
    interpreter_code_get(id, &code);
    frame.varint(id);
    frame.varint(code.language);
    frame.blob(code.name, code.name_length);
    frame.blob(code.file, code.file_length);
    frame.signed_varint(code.first_line);
    frame.varint(code.table_format);
    frame.blob(code.table, code.table_length);
  }
  frame.end_list(mark, codes_end - g_writer.codes_end);
  g_writer.codes_end = codes_end;
}

void write_modules(FrameBuilder& frame) {
  module_map_lock();
  uint32_t count = module_map_count();
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kModuleLoads, count - g_writer.modules_end);
  for (uint32_t id = g_writer.modules_end; id < count; ++id) {
    const ModuleRecord* module = module_map_get(id);
    frame.varint(module->id);
    frame.varint(module->base);
    frame.blob(module->path, module->path_length);
    frame.blob(module->build_id, module->build_id_length);
    frame.varint(module->segment_count);
    for (uint32_t s = 0; s < module->segment_count; ++s) {
      frame.varint(module->segments[s].vaddr);
      frame.varint(module->segments[s].memsz);
      frame.varint(module->segments[s].file_offset);
      frame.varint(module->segments[s].flags);
    }
    frame.varint(module->load_ns > g_writer.start_monotonic_ns ? module->load_ns - g_writer.start_monotonic_ns : 0);
    frame.varint(raw(module->load_epoch));
  }
  frame.end_list(mark, count - g_writer.modules_end);
  g_writer.modules_end = count;
  g_writer.module_unload_emitted.resize(count);

  uint32_t unloads = 0;
  for (uint32_t id = 0; id < count; ++id) {
    if (module_map_get(id)->unloaded && !g_writer.module_unload_emitted[id]) ++unloads;
  }
  mark = frame.begin_list(SectionTag::kModuleUnloads, unloads);
  for (uint32_t id = 0; id < count; ++id) {
    const ModuleRecord* module = module_map_get(id);
    if (!module->unloaded || g_writer.module_unload_emitted[id]) continue;
    frame.varint(id);
    frame.varint(module->unload_ns > g_writer.start_monotonic_ns ? module->unload_ns - g_writer.start_monotonic_ns : 0);
    frame.varint(raw(module->unload_epoch));
    g_writer.module_unload_emitted[id] = 1;
  }
  frame.end_list(mark, unloads);
  module_map_unlock();
}

// tail_node() is the node of a stack's tail, 0 when there is no memory for it.
uint32_t tail_node(const StackTail* tail) {
  if (tail->id < g_writer.node_of_tail.size() && g_writer.node_of_tail[tail->id] != 0) {
    return g_writer.node_of_tail[tail->id];
  }
  if (tail->id >= g_writer.node_of_tail.size() && !g_writer.node_of_tail.resize(tail->id + 1)) return 0;
  uint32_t node = g_writer.tail_nodes.node_for(tail->frames, tail->depth);
  g_writer.node_of_tail[tail->id] = node;
  return node;
}

// write_stacks() emits the new stacks: first the nodes of their tails that the stream lacks
// (STACK_NODES), then per stack its head frames and its tail's node (STACKS). A stack whose tail
// has no node (no memory) is written with every frame in its head.
void write_stacks(FrameBuilder& frame, uint32_t stacks_end) {
  for (uint32_t id = g_writer.stacks_end; id < stacks_end; ++id) {
    const StackEntry* stack = depot_get(static_cast<StackId>(id));
    if (stack->tail != nullptr) tail_node(stack->tail);
  }
  uint32_t nodes_end = g_writer.tail_nodes.end_id();
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kStackNodes, nodes_end - g_writer.stack_nodes_end);
  frame.varint(g_writer.stack_nodes_end);
  for (uint32_t id = g_writer.stack_nodes_end; id < nodes_end; ++id) {
    const StackNodeTree::Node& node = g_writer.tail_nodes.node(id);
    uint64_t parent_frame = node.parent == 0 ? 0 : g_writer.tail_nodes.node(node.parent).frame;
    frame.varint(id - node.parent);
    frame.signed_varint(static_cast<int64_t>(node.frame - parent_frame));
  }
  frame.end_list(mark, nodes_end - g_writer.stack_nodes_end);
  g_writer.stack_nodes_end = nodes_end;

  // Head frames are differences from the frame at the same depth in the previous stack: stacks
  // made one after another mostly differ in a frame or two.
  uintptr_t previous[kMaxStackDepth];
  uint32_t previous_depth = 0;
  uint32_t previous_id = 0;
  mark = frame.begin_list(SectionTag::kStacks, stacks_end - g_writer.stacks_end);
  for (uint32_t id = g_writer.stacks_end; id < stacks_end; ++id) {
    const StackEntry* stack = depot_get(static_cast<StackId>(id));
    uint32_t node = stack->tail != nullptr ? tail_node(stack->tail) : 0;
    uint32_t head_depth = stack->tail == nullptr ? stack->depth : node != 0 ? kStackHeadFrames : stack->depth;
    frame.varint(id - previous_id);
    frame.varint(head_depth);
    for (uint32_t i = 0; i < head_depth; ++i) {
      uintptr_t address = stack->frame(i);
      uintptr_t base = i < previous_depth ? previous[i] : i > 0 ? stack->frame(i - 1) : 0;
      frame.signed_varint(static_cast<int64_t>(address - base));
      if (i < kMaxStackDepth) previous[i] = address;
    }
    frame.varint(node);
    previous_depth = head_depth < kMaxStackDepth ? head_depth : kMaxStackDepth;
    previous_id = id;
  }
  frame.end_list(mark, stacks_end - g_writer.stacks_end);
  g_writer.stacks_end = stacks_end;
}

// current_thread_name() is the thread's name now; false once the thread is gone.
bool current_thread_name(pid_t tid, bool exited, const char* exit_name, char* name) {
  if (exited) {
    if (exit_name[0] == '\0') return false;
    memcpy(name, exit_name, kThreadNameSize);
    return false;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
  char text[kThreadNameSize + 2];
  long length = sys::read_small_file(path, text, sizeof(text));
  if (length < 0) return false;
  if (length > 0 && text[length - 1] == '\n') text[--length] = '\0';
  memset(name, 0, kThreadNameSize);
  memcpy(name, text, static_cast<size_t>(length) < kThreadNameSize ? static_cast<size_t>(length) : kThreadNameSize - 1);
  return true;
}

// kernel_knows() is whether the kernel still has thread `tid` of this process, exiting or not.
bool kernel_knows(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  char text[8];
  return sys::read_small_file(path, text, sizeof(text)) != -ENOENT;
}

// write_threads() emits the threads that are new or changed (name, exit) since the last
// snapshot. A thread in a slot that held another before it is flagged as new (FORMAT.md). A slot
// whose thread the stream has already said is gone, and which the kernel has forgotten, is
// released for reuse: nothing of that thread can run any more, and the next thread in the slot
// allocates in epochs after this snapshot's.
void write_threads(FrameBuilder& frame, uint32_t slots_end) {
  InternalArray<uint32_t> changed;
  InternalArray<uint8_t> successor;  // per changed slot: its thread follows another
  g_writer.threads.resize(slots_end);
  for (uint32_t slot = 1; slot < slots_end; ++slot) {
    ThreadRecordCopy record;
    if (!thread_slot_read(static_cast<ThreadSlot>(slot), &record)) continue;
    EmittedThread& emitted = g_writer.threads[slot];
    if (record.incarnation == 0) {
      // Released: its last thread is gone, and blocks it allocated may still be live. A stream
      // that has not said that thread (a forked child's, or since a key snapshot) says it once.
      if (record.tid == 0 || (emitted.incarnation != 0 && emitted.tid != -1)) continue;
      if (emitted.incarnation == 0) emitted.incarnation = kReleasedSlotSaid;
      emitted.tid = record.tid;
      emitted.exited = true;
      const char* last_name = record.given_name[0] != '\0' ? record.given_name : record.exit_name;
      memset(emitted.name, 0, sizeof(emitted.name));
      memcpy(emitted.name, last_name, strnlen(last_name, sizeof(emitted.name) - 1));
      changed.push_back(slot);
      successor.push_back(0);
      continue;
    }
    bool same_thread = emitted.incarnation == record.incarnation;
    char name[kGivenThreadNameSize] = {};
    if (same_thread) memcpy(name, emitted.name, kGivenThreadNameSize);
    bool alive = current_thread_name(record.tid, record.exited, record.exit_name, name);
    if (record.given_name[0] != '\0') memcpy(name, record.given_name, kGivenThreadNameSize);
    name[kGivenThreadNameSize - 1] = '\0';
    if (same_thread && emitted.tid == record.tid && emitted.exited == !alive &&
        strcmp(name, emitted.name) == 0) {
      if (emitted.exited && !kernel_knows(record.tid)) {
        thread_slot_release(static_cast<ThreadSlot>(slot), record.incarnation);
      }
      continue;
    }
    bool follows = !same_thread && emitted.incarnation != 0;
    emitted.incarnation = record.incarnation;
    emitted.tid = record.tid;
    emitted.exited = !alive;
    memcpy(emitted.name, name, kGivenThreadNameSize);
    changed.push_back(slot);
    successor.push_back(follows ? 1 : 0);
  }
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kThreads, changed.size());
  for (size_t i = 0; i < changed.size(); ++i) {
    const EmittedThread& emitted = g_writer.threads[changed[i]];
    frame.varint(changed[i]);
    frame.varint(static_cast<uint64_t>(emitted.tid));
    frame.string(emitted.name);
    frame.varint((emitted.exited ? kThreadExited : 0) | (successor[i] != 0 ? kThreadFollowsAnother : 0));
  }
  frame.end_list(mark, changed.size());
  changed.release();
  successor.release();
}

void write_tasks(FrameBuilder& frame, uint32_t tasks_end) {
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kTasks, tasks_end - g_writer.tasks_end);
  for (uint32_t id = g_writer.tasks_end; id < tasks_end; ++id) {
    const TaskEntry* task = task_get(static_cast<TaskId>(id));
    frame.varint(id);
    frame.varint(task->user_id);
    frame.blob(task->name, task->name_length);
  }
  frame.end_list(mark, tasks_end - g_writer.tasks_end);
  g_writer.tasks_end = tasks_end;
}

// Sites and triples give ids and the ids they refer to as differences from the previous entry's:
// they are made together with their stack or site, so each difference is mostly 1.
void write_sites(FrameBuilder& frame, uint32_t sites_end) {
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kSites, sites_end - g_writer.sites_end);
  uint32_t previous_id = 0, previous_stack = 0;
  for (uint32_t id = g_writer.sites_end; id < sites_end; ++id) {
    const SiteEntry* site = site_get(static_cast<SiteId>(id));
    frame.varint(id - previous_id);
    frame.varint(static_cast<uint64_t>(site->domain));
    frame.signed_varint(static_cast<int64_t>(raw(site->stack)) - previous_stack);
    previous_id = id;
    previous_stack = raw(site->stack);
  }
  frame.end_list(mark, sites_end - g_writer.sites_end);
  g_writer.sites_end = sites_end;
}

void write_triples(FrameBuilder& frame, uint32_t triples_end) {
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kTriples, triples_end - g_writer.triples_end);
  uint32_t previous_id = 0, previous_site = 0;
  for (uint32_t id = g_writer.triples_end; id < triples_end; ++id) {
    const TripleEntry* triple = triple_get(static_cast<TripleId>(id));
    frame.varint(id - previous_id);
    frame.signed_varint(static_cast<int64_t>(triple->site->id) - previous_site);
    frame.varint(raw(triple->thread));
    frame.varint(raw(triple->task));
    previous_id = id;
    previous_site = triple->site->id;
  }
  frame.end_list(mark, triples_end - g_writer.triples_end);
  g_writer.triples_end = triples_end;
}

// The counters of the triples that moved since the last snapshot, read before the frame is begun
// (INFO gives the host heap bytes they make) and emitted in COUNTERS.
struct CountersRead {
  InternalArray<uint32_t> changed;
  InternalArray<EmittedCounters> now;
  int64_t host_heap_bytes = 0;  // live in heap and c10_cpu triples, as their counters now say
};

// read_counters() also lists in *freed the triples that freed something since the last snapshot.
void read_counters(uint32_t triples_end, CountersRead* read, InternalArray<uint32_t>* freed) {
  g_writer.counters.resize(triples_end);
  int64_t host_heap_moved = 0;
  for (uint32_t id = 1; id < triples_end; ++id) {
    const TripleEntry* triple = triple_get(static_cast<TripleId>(id));
    if (triple == nullptr) break;  // the lookup is null only past the end read above
    // Frees are read before allocations so that a block born and freed during this read is never
    // seen freed but not allocated.
    EmittedCounters current;
    current.free_count = triple->free_count.load(std::memory_order_relaxed);
    current.free_bytes = triple->free_bytes.load(std::memory_order_relaxed);
    current.split_count = triple->split_count.load(std::memory_order_relaxed);
    current.alloc_count = triple->alloc_count.load(std::memory_order_relaxed);
    current.alloc_bytes = triple->alloc_bytes.load(std::memory_order_relaxed);
    const EmittedCounters& before = g_writer.counters[id];
    if (memcmp(&current, &before, sizeof(current)) == 0) continue;
    if (current.free_bytes != before.free_bytes) freed->push_back(id);
    Domain domain = triple->site->domain;
    if (domain == Domain::kHeap || domain == Domain::kC10Cpu) {
      host_heap_moved += static_cast<int64_t>(current.alloc_bytes - before.alloc_bytes) -
                         static_cast<int64_t>(current.free_bytes - before.free_bytes);
    }
    read->changed.push_back(id);
    read->now.push_back(current);
  }
  read->host_heap_bytes = g_writer.host_heap_bytes + host_heap_moved;
}

void write_counters(FrameBuilder& frame, CountersRead& read) {
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kCounters, read.changed.size());
  uint32_t previous_id = 0;
  for (size_t i = 0; i < read.changed.size(); ++i) {
    EmittedCounters& before = g_writer.counters[read.changed[i]];
    const EmittedCounters& after = read.now[i];
    frame.varint(read.changed[i] - previous_id);
    frame.varint(after.alloc_count - before.alloc_count);
    frame.varint(after.alloc_bytes - before.alloc_bytes);
    frame.varint(after.free_count - before.free_count);
    frame.varint(after.free_bytes - before.free_bytes);
    frame.varint(after.split_count - before.split_count);
    before = after;
    previous_id = read.changed[i];
  }
  frame.end_list(mark, read.changed.size());
  g_writer.host_heap_bytes = read.host_heap_bytes;
  read.changed.release();
  read.now.release();
}

// mark_births_dirty() sets the triples whose cells are all recomputed: those that freed something
// since the last snapshot (a freed block may be of any age) and those new since the last scan.
bool mark_births_dirty(const InternalArray<uint32_t>& freed_triples, uint32_t triples_end) {
  size_t words = (triples_end + 63) / 64;
  if (!g_writer.births_dirty.resize(words)) return false;
  memset(g_writer.births_dirty.data(), 0, words * sizeof(uint64_t));
  auto mark = [](uint32_t triple) { g_writer.births_dirty[triple >> 6] |= uint64_t{1} << (triple & 63); };
  for (size_t i = 0; i < freed_triples.size(); ++i) mark(freed_triples[i]);
  for (uint32_t triple = g_writer.births_triples_end; triple < triples_end; ++triple) mark(triple);
  return true;
}

// restore_births() undoes a write_births() that ran out of memory: every recomputed cell gets its
// emitted value back (0 for a cell this scan made), so the next snapshot starts from what the
// stream holds.
void restore_births() {
  for (BirthCell* cell = g_writer.births.begin(); cell != g_writer.births.end(); ++cell) {
    if (cell->key == 0 || !recompute_cell(cell->key)) continue;
    const BirthCell* before = g_writer.births_before.find(cell->key);
    cell->bytes = before != nullptr ? before->bytes : 0;
    cell->blocks = before != nullptr ? before->blocks : 0;
  }
}

// compact_births() drops the cells whose blocks are all gone once they outnumber the rest, so the
// map (and every pass over it) stays in proportion to what is live.
void compact_births(size_t empty_cells) {
  if (empty_cells < 4096 || empty_cells * 2 < g_writer.births.count()) return;
  BirthMap compacted;
  for (BirthCell* cell = g_writer.births.begin(); cell != g_writer.births.end(); ++cell) {
    if (cell->key == 0 || (cell->bytes == 0 && cell->blocks == 0)) continue;
    if (!compacted.add(cell->key, cell->bytes, cell->blocks)) {
      compacted.release();
      return;  // out of memory: keep the map as it is, empty cells and all
    }
  }
  g_writer.births.swap(compacted);
  compacted.release();
}

// write_births() emits the cells of the birth histogram that changed. The map is kept between
// snapshots, and only the cells that can have changed are recomputed from the tables: those of
// triples that freed something or are new, and those of epochs the last scan did not count.
// A process holding a million blocks from its startup then pays one pass over the table and the
// map per snapshot, not a map update per live block.
// settle_when_due() applies the queue of deferred records (deferred_records.h) while a long
// table scan keeps the writer from it, before it fills and the program's threads apply it
// themselves. Records applied between shards are as a program's hooks acting during the scan.
void settle_when_due() {
  if (deferred_records_pending() >= kDeferredSettleAt) deferred_records_settle();
}

void write_births(FrameBuilder& frame, Epoch closed, uint32_t triples_end, const InternalArray<uint32_t>& freed_triples) {
  g_writer.births_incomplete = false;
  g_writer.births_before.clear();
  if (!mark_births_dirty(freed_triples, triples_end)) {
    g_writer.births_fresh_from = 0;  // out of memory: nothing emitted; recompute all next time
    return;
  }
  // Set the recomputed cells aside, then to zero; the scan adds their live blocks again.
  for (BirthCell* cell = g_writer.births.begin(); cell != g_writer.births.end(); ++cell) {
    if (cell->key == 0 || !recompute_cell(cell->key)) continue;
    if (!g_writer.births_before.add(cell->key, cell->bytes, cell->blocks)) {
      g_writer.births_before.clear();  // out of memory before any change: emit nothing
      g_writer.births_fresh_from = 0;
      return;
    }
  }
  for (BirthCell* cell = g_writer.births.begin(); cell != g_writer.births.end(); ++cell) {
    if (cell->key != 0 && recompute_cell(cell->key)) cell->bytes = cell->blocks = 0;
  }
  ScanContext scan{triples_end, raw(closed)};
  alloc_table_visit(scan_heap, &scan, settle_when_due);
  interval_map_visit(scan_intervals, &scan);
  device_table_visit(scan_device_blocks, &scan);
  // The list's count comes before its elements, so the changes are gathered first.
  InternalArray<BirthCell> changed;
  size_t empty_cells = 0;
  for (BirthCell* cell = g_writer.births.begin(); cell != g_writer.births.end() && !g_writer.births_incomplete;
       ++cell) {
    if (cell->key == 0) continue;
    empty_cells += cell->bytes == 0 && cell->blocks == 0;
    if (!recompute_cell(cell->key)) continue;
    const BirthCell* before = g_writer.births_before.find(cell->key);
    int64_t bytes_before = before != nullptr ? before->bytes : 0;
    int64_t blocks_before = before != nullptr ? before->blocks : 0;
    if (bytes_before == cell->bytes && blocks_before == cell->blocks) continue;
    g_writer.births_incomplete |=
        !changed.push_back(BirthCell{cell->key, cell->bytes - bytes_before, cell->blocks - blocks_before});
  }
  if (g_writer.births_incomplete) {
    // Out of memory: emit nothing and put back what the stream holds; recompute all next time.
    changed.release();
    restore_births();
    g_writer.births_before.clear();
    g_writer.births_fresh_from = 0;
    return;
  }
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kBirths, changed.size());
  for (size_t i = 0; i < changed.size(); ++i) {
    frame.varint(changed[i].key >> 32);
    frame.varint(changed[i].key & 0xffffffffu);
    frame.signed_varint(changed[i].bytes);
    frame.signed_varint(changed[i].blocks);
  }
  frame.end_list(mark, changed.size());
  changed.release();
  g_writer.births_before.clear();
  // Epochs after the closed one were not counted; triples below the mark are known from now on.
  g_writer.births_fresh_from = raw(closed) + 1;
  g_writer.births_triples_end = triples_end;
  compact_births(empty_cells);
}

// write_lifetimes() takes what each triple freed since the last snapshot, by lifetime bucket, and
// its temporary blocks, with atomic exchanges (a free racing with them lands before or after,
// never lost), and emits the sums per site: LIFETIMES, then TEMPORARIES. Only triples whose frees
// moved (write_counters) are visited, and no per-site state is kept between snapshots.
void write_lifetimes(FrameBuilder& frame, const InternalArray<uint32_t>& freed_triples, uint32_t sites_end) {
  InternalArray<uint32_t> sites;
  InternalArray<LifetimeBytes> deltas;
  InternalArray<uint64_t> temporaries;
  g_writer.site_slot.resize(sites_end);
  size_t sites_with_temporaries = 0;
  for (size_t i = 0; i < freed_triples.size(); ++i) {
    TripleEntry* triple = triple_get_mutable(static_cast<TripleId>(freed_triples[i]));
    LifetimeBytes delta{};
    bool any = false;
    for (int b = 0; b < kLifetimeBuckets; ++b) {
      delta.bytes[b] = triple->freed_bytes_by_lifetime[b].exchange(0, std::memory_order_relaxed);
      any |= delta.bytes[b] != 0;
    }
    uint64_t temporary = triple->temporary_blocks.exchange(0, std::memory_order_relaxed);
    if (!any && temporary == 0) continue;
    uint32_t& site_slot = g_writer.site_slot[triple->site->id];
    if (site_slot == 0) {
      sites.push_back(triple->site->id);
      deltas.push_back(LifetimeBytes{});
      temporaries.push_back(0);
      site_slot = static_cast<uint32_t>(sites.size());
    }
    size_t slot = site_slot - 1;
    for (int b = 0; b < kLifetimeBuckets; ++b) deltas[slot].bytes[b] += delta.bytes[b];
    if (temporaries[slot] == 0 && temporary != 0) ++sites_with_temporaries;
    temporaries[slot] += temporary;
  }
  FrameBuilder::SectionMark mark = frame.begin_list(SectionTag::kLifetimes, sites.size());
  for (size_t i = 0; i < sites.size(); ++i) {
    uint32_t mask = 0;
    for (int b = 0; b < kLifetimeBuckets; ++b) {
      if (deltas[i].bytes[b] != 0) mask |= 1u << b;
    }
    frame.varint(sites[i]);
    frame.varint(mask);
    for (int b = 0; b < kLifetimeBuckets; ++b) {
      if (mask & (1u << b)) frame.varint(deltas[i].bytes[b]);
    }
  }
  frame.end_list(mark, sites.size());
  mark = frame.begin_list(SectionTag::kTemporaries, sites_with_temporaries);
  for (size_t i = 0; i < sites.size(); ++i) {
    if (temporaries[i] == 0) continue;
    frame.varint(sites[i]);
    frame.varint(temporaries[i]);
  }
  frame.end_list(mark, sites_with_temporaries);
  for (size_t i = 0; i < sites.size(); ++i) g_writer.site_slot[sites[i]] = 0;
  sites.release();
  deltas.release();
  temporaries.release();
}

// write_leak_check() writes a leak check's figures and what each triple lost (FORMAT.md, LEAK_CHECK).
void write_leak_check(FrameBuilder& frame, const LeakCheckResult& check) {
  FrameBuilder::SectionMark mark = frame.begin_record(SectionTag::kLeakCheck);
  frame.varint(static_cast<uint64_t>(check.trigger));
  frame.varint(check.stopped_at_ns > g_writer.start_monotonic_ns ? check.stopped_at_ns - g_writer.start_monotonic_ns : 0);
  frame.varint(check.stopped_ns);
  frame.varint(check.threads_paused);
  frame.varint(check.threads_missed);
  frame.varint(check.blocks);
  frame.varint(check.bytes);
  frame.varint(check.root_bytes);
  frame.varint(check.memory_bytes);
  frame.varint(check.flags);
  frame.varint(check.lost_count);
  uint32_t previous = 0;
  for (size_t i = 0; i < check.lost_count; ++i) {
    const LostInTriple& lost = check.lost[i];
    frame.varint(lost.triple - previous);
    frame.varint(lost.bytes);
    frame.varint(lost.blocks);
    frame.varint(lost.indirect_bytes);
    frame.varint(lost.indirect_blocks);
    previous = lost.triple;
  }
  frame.end_record(mark);
}

void reset_emitted_state() {
  const DefinitionEnds& inherited = g_writer.inherited;
  g_writer.stacks_end = inherited.stacks;
  g_writer.stack_nodes_end = inherited.stack_nodes;
  g_writer.sites_end = inherited.sites;
  g_writer.triples_end = inherited.triples;
  g_writer.tasks_end = inherited.tasks;
  g_writer.codes_end = inherited.codes;
  g_writer.modules_end = inherited.modules;
  g_writer.module_unload_emitted.clear();
  // Every thread is said again, but which thread a slot held is kept, so that a new one is
  // still flagged as following another.
  for (size_t slot = 0; slot < g_writer.threads.size(); ++slot) g_writer.threads[slot].tid = -1;
  g_writer.counters.clear();
  g_writer.host_heap_bytes = 0;
  g_writer.site_slot.clear();
  g_writer.births.clear();
  g_writer.births_fresh_from = 0;
  g_writer.births_triples_end = 1;
}

// absolute() writes `path` as seen from the root (the working directory may change, and a reader
// of a child's stream runs elsewhere); a path that does not fit is kept as it is.
void absolute(const char* path, char* out, size_t size) {
  char directory[kMaxPathLength];
  if (path[0] == '/' || getcwd(directory, sizeof(directory)) == nullptr ||
      static_cast<size_t>(snprintf(out, size, "%s/%s", directory, path)) >= size) {
    snprintf(out, size, "%s", path);
  }
}

void write_cmdline(FrameBuilder& frame) {
  char text[8192];
  long length = sys::read_small_file("/proc/self/cmdline", text, sizeof(text));
  uint64_t count = 0;
  for (long i = 0; i < length; ++i) count += text[i] == '\0';
  frame.varint(count);
  for (long i = 0; i < length;) {
    size_t argument = strlen(text + i);
    frame.blob(text + i, argument);
    i += static_cast<long>(argument) + 1;
  }
}

// ensure_output() makes sure g_writer.fd is still our file; 0 or -ESTALE.
int ensure_output() {
  uint64_t device = 0, inode = 0;
  if (sys::file_identity(g_writer.fd, &device, &inode) && device == g_writer.file_device &&
      inode == g_writer.file_inode) {
    return 0;
  }
  // Closed, or the number now belongs to one of the program's files: never write there.
  int reopened = sys::open_file(g_writer.path, O_WRONLY | O_APPEND | O_NOFOLLOW, 0);
  if (reopened < 0) return -ESTALE;
  if (!sys::file_identity(reopened, &device, &inode) || device != g_writer.file_device ||
      inode != g_writer.file_inode) {
    sys::close_file(reopened);
    return -ESTALE;
  }
  g_writer.fd = sys::move_fd_high(reopened);
  return 0;
}

}  // namespace

int snapshot_writer_open(int fd, const char* path, const ProcessDescription& process) {
  reset_emitted_state();
  g_writer.snapshots_written = 0;
  g_writer.snapshots_since_key = 0;
  g_writer.bytes_since_key = 0;
  g_writer.last_key_bytes = 0;
  g_writer.definition_bytes_since_key = 0;
  g_writer.fd = sys::move_fd_high(fd);
  g_writer.path = path;
  absolute(path, g_writer.absolute_path, sizeof(g_writer.absolute_path));
  if (!sys::file_identity(g_writer.fd, &g_writer.file_device, &g_writer.file_inode)) return -EBADF;
  g_writer.start_monotonic_ns = process.start_monotonic_ns;

  uint8_t header[kFileHeaderSize] = {};
  memcpy(header, kFileMagic, sizeof(kFileMagic));
  le32_put(header + 8, kFormatVersion);
  if (int error = sys::write_all(g_writer.fd, header, sizeof(header)); error != 0) return error;

  FrameBuilder& frame = g_writer.frame;
  frame.start(FrameType::kProcess);
  frame.string(LEAKSCOPE_VERSION);
  frame.varint(static_cast<uint64_t>(process.pid));
  frame.varint(static_cast<uint64_t>(process.ppid));
  frame.varint(static_cast<uint64_t>(process.traced_parent_pid));
  char exe[4096];
  if (sys::read_link("/proc/self/exe", exe, sizeof(exe)) < 0) exe[0] = '\0';
  frame.string(exe);
  write_cmdline(frame);
  frame.varint(process.start_realtime_ns);
  frame.varint(process.interval_ns);
  frame.varint(process.depth);
  frame.varint(sys::page_size());
  frame.string(process.options);
  frame.varint(raw(epoch_current()));
  frame.string(g_writer.parent_path);
  frame.varint(g_writer.parent_snapshots);
  const DefinitionEnds& inherited = g_writer.inherited;
  for (uint32_t end : {inherited.stacks, inherited.stack_nodes, inherited.sites, inherited.triples, inherited.tasks,
                       inherited.codes, inherited.modules}) {
    frame.varint(end);
  }
  if (!frame.finish()) return -ENOMEM;
  return sys::write_all(g_writer.fd, frame.data(), frame.size());
}

int snapshot_writer_write(SnapshotReason reason, int signal_number, bool final, const LeakCheckResult* leak_check) {
  if (g_writer.fd < 0) return -EBADF;
  Epoch closed = epoch_close();
  module_map_refresh(closed, false);

  // Read the watermarks outermost first: a triple is published after its site, thread and task,
  // and a site after its stack, so everything a triple below the mark refers to is below theirs.
  uint32_t triples_end = triple_end_id();
  uint32_t sites_end = site_end_id();
  uint32_t stacks_end = depot_end_id();
  uint32_t slots_end = thread_slot_end();
  // Read after the stacks' end: every stack up to it names code published before it.
  uint32_t codes_end = interpreter_code_end();
  uint32_t tasks_end = task_end_id();

  // A key repeats what the stream holds, so that a reader can start over at it; the first
  // snapshot is one by nature. One is due once the snapshots since the last key took twice what a
  // key would take now (the last one's size and the definitions made since), so keys stay a third
  // of the stream at most, and a process still defining stacks, whose next key would repeat all
  // of them, writes none.
  uint64_t key_estimate = g_writer.last_key_bytes + g_writer.definition_bytes_since_key;
  bool key = g_writer.snapshots_written == 0 ||
             (!final && g_writer.snapshots_since_key >= kKeySnapshotEvery &&
              g_writer.bytes_since_key >= 2 * key_estimate);
  if (key && g_writer.snapshots_written != 0) reset_emitted_state();
  CountersRead counters;
  InternalArray<uint32_t> freed_triples;
  read_counters(triples_end, &counters, &freed_triples);
  FrameBuilder& frame = g_writer.frame;
  frame.start(key ? FrameType::kKeySnapshot : FrameType::kSnapshot);
  write_info(frame, closed, reason, signal_number, final,
             counters.host_heap_bytes > 0 ? static_cast<uint64_t>(counters.host_heap_bytes) : 0);
  size_t definitions_begin = frame.size();
  write_modules(frame);
  write_interpreted_code(frame, codes_end);
  write_stacks(frame, stacks_end);
  write_threads(frame, slots_end);
  write_tasks(frame, tasks_end);
  write_sites(frame, sites_end);
  write_triples(frame, triples_end);
  size_t definition_bytes = frame.size() - definitions_begin;
  write_counters(frame, counters);
  write_births(frame, closed, triples_end, freed_triples);
  write_lifetimes(frame, freed_triples, sites_end);
  freed_triples.release();
  write_device_sections(frame, sites_end);
  if (leak_check != nullptr) write_leak_check(frame, *leak_check);
  if (!frame.finish()) return -ENOMEM;
  int error = ensure_output();
  if (error == 0) error = sys::write_all(g_writer.fd, frame.data(), frame.size());
  ++g_writer.snapshots_written;
  if (key) {
    g_writer.snapshots_since_key = 0;
    g_writer.bytes_since_key = 0;
    g_writer.last_key_bytes = frame.size();
    g_writer.definition_bytes_since_key = 0;
  } else {
    ++g_writer.snapshots_since_key;
    g_writer.bytes_since_key += frame.size();
    g_writer.definition_bytes_since_key += definition_bytes;
  }
  frame.trim();
  return error;
}

int snapshot_writer_fd() { return g_writer.fd; }

void snapshot_writer_after_fork_child() {
  if (g_writer.fd < 0 || g_writer.snapshots_written == 0) return;  // nothing the child could take
  // What the parent's stream holds is what its writer had emitted: the fork waited for any
  // snapshot being written (the runtime's snapshot lock).
  memcpy(g_writer.parent_path, g_writer.absolute_path, sizeof(g_writer.parent_path));
  g_writer.parent_snapshots = g_writer.snapshots_written;
  g_writer.inherited = DefinitionEnds{g_writer.stacks_end, g_writer.stack_nodes_end, g_writer.sites_end,
                                      g_writer.triples_end, g_writer.tasks_end, g_writer.codes_end, g_writer.modules_end};
}

}  // namespace leakscope::internal
