// File: run_state.h
//
// The state of a traced process as rebuilt from its stream, one snapshot at a time: process,
// modules, stacks, threads, tasks, sites and triples with their cumulative counters, and the live
// bytes per (triple, birth epoch). Memory grows with the number of distinct stacks, triples and
// live (triple, epoch) pairs, never with the number of snapshots.
#ifndef LEAKSCOPE_REPORT_RUN_STATE_H_
#define LEAKSCOPE_REPORT_RUN_STATE_H_

#include <array>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/stream_format.h"
#include "core/types.h"
#include "report/chunked_vector.h"
#include "report/stream_reader.h"

namespace leakscope::report {

using internal::Domain;

struct ProcessInfo {
  std::string leakscope_version;
  int64_t pid = 0;
  int64_t ppid = 0;
  int64_t traced_parent_pid = 0;
  std::string exe;
  std::vector<std::string> argv;
  uint64_t start_realtime_ns = 0;
  uint64_t interval_ns = 0;
  uint32_t depth = 0;
  uint64_t page_size = 0;
  std::string options;
  uint32_t first_epoch = 0;
  uint64_t sample_interval = 0;  // from options: 0 = exact, else figures are estimates
  // A forked child's stream takes the definitions its parent had written before the fork from the
  // parent's stream: its path (empty when none), and how many snapshots of it hold them.
  std::string parent_stream;
  uint64_t parent_snapshots = 0;
};

struct SnapshotInfo {
  uint32_t epoch = 0;
  uint64_t time_ns = 0;  // since the process (or fork) start
  uint64_t realtime_ns = 0;
  internal::SnapshotReason reason = internal::SnapshotReason::kPeriodic;
  uint32_t signal_number = 0;
  bool final = false;
  uint64_t rss_bytes = 0, pss_bytes = 0, anon_bytes = 0, file_bytes = 0, shmem_bytes = 0, swap_bytes = 0,
           hwm_bytes = 0;
  uint64_t overhead_bytes = 0;
  uint64_t tracked_heap_blocks = 0;
  uint64_t reserved_bytes = 0;  // address space mapped PROT_NONE, not memory (0 in older streams)
  uint32_t budget_stage = 0;    // internal::BudgetStage of leakscope's own memory budget
  uint64_t peak_overhead_bytes = 0;  // the most leakscope's own memory was so far (0 in older streams)
  internal::DeviceTracking device_tracking = internal::DeviceTracking::kNotAsked;  // kept as written, known or not
};

// When leakscope's own memory reached its budget (docs/RUNTIME.md), as snapshot times; absent
// when it never did.
struct BudgetTimes {
  std::optional<uint64_t> coarse_stacks_ns;
  std::optional<uint64_t> counting_only_ns;
};

// The stacks of allocations made during start-up that the runtime cut (startup_depth,
// docs/RUNTIME.md): how many, and the innermost frames they keep before their marker.
struct StartupStacks {
  uint64_t stacks = 0;
  uint32_t kept_frames = 0;
};

struct ModuleSegment {
  uint64_t vaddr, memsz, file_offset;
  uint32_t flags;
};

struct Module {
  uint32_t id = 0;
  uint64_t base = 0;
  std::string path;
  std::string build_id;  // raw bytes
  std::vector<ModuleSegment> segments;
  uint64_t load_ns = 0;
  uint32_t load_epoch = 0;
  bool unloaded = false;
  uint64_t unload_ns = 0;
  uint32_t unload_epoch = 0;

  bool contains(uint64_t address) const;
};

// One node of the stream's tree of stack tails (STACK_NODES): a frame and its caller's node.
struct StackNode {
  uint64_t frame = 0;
  uint32_t parent = 0;  // 0: outermost
  uint32_t depth = 0;   // frames from this node out
};

// A stack as the stream gives it: head frames kept in RunState's arena, then a tail node. Its
// frames are read through RunState::frames(); a stack is never built out whole, so memory follows
// the stream's size and not the frames it stands for. The head frames are kept as zigzag varints
// of each frame's difference from the one before (the first from 0): a stack's frames lie close
// together, and 8 bytes a frame were a quarter of the memory of a process with many stacks.
struct Stack {
  uint64_t head_offset = 0;  // into the arena, in bytes
  uint32_t head_depth = 0;
  uint32_t tail = 0;         // StackNode id, 0: none
  uint32_t depth = 0;        // 0 while undefined
  uint32_t first_epoch = 0;  // epoch of the snapshot that first carried it
};

// StackFrames: the frames of one stack, innermost first, walked from its head into its tail.
class StackFrames {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = uint64_t;
    iterator() = default;
    iterator(const StackFrames* frames, uint32_t index, uint32_t node)
        : frames_(frames), index_(index), node_(node), cursor_(frames->head_) {
      if (index_ < frames_->head_depth_) read_head_frame();
    }
    uint64_t operator*() const { return index_ < frames_->head_depth_ ? frame_ : (*frames_->nodes_)[node_].frame; }
    iterator& operator++() {
      if (index_ < frames_->head_depth_) {
        if (++index_ < frames_->head_depth_) read_head_frame();
      } else {
        node_ = (*frames_->nodes_)[node_].parent;
      }
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const iterator& other) const { return index_ == other.index_ && node_ == other.node_; }

   private:
    // read_head_frame() decodes the next head frame into frame_.
    void read_head_frame() {
      uint64_t delta = 0;
      internal::varint_get(&cursor_, frames_->head_end_, &delta);
      frame_ += static_cast<uint64_t>(internal::zigzag_decode(delta));
    }

    const StackFrames* frames_ = nullptr;
    uint32_t index_ = 0;
    uint32_t node_ = 0;
    const uint8_t* cursor_ = nullptr;  // the next head frame's bytes
    uint64_t frame_ = 0;               // the head frame at index_
  };

  // [head, head_end) holds the head frames' bytes, as the RunState wrote them (null when there
  // are none), and may hold more after them.
  StackFrames(const uint8_t* head, const uint8_t* head_end, uint32_t head_depth, uint32_t tail,
              const ChunkedVector<StackNode>* nodes)
      : head_(head), head_end_(head_end), head_depth_(head_depth), tail_(tail), nodes_(nodes) {}
  iterator begin() const { return iterator(this, 0, tail_); }
  iterator end() const { return iterator(this, head_depth_, 0); }
  std::vector<uint64_t> to_vector() const { return std::vector<uint64_t>(begin(), end()); }

 private:
  const uint8_t* head_;
  const uint8_t* head_end_;
  uint32_t head_depth_;
  uint32_t tail_;
  const ChunkedVector<StackNode>* nodes_;
};

// No stack the runtime writes is deeper (kMaxStackDepth, and interpreted frames within it); a
// deeper one is damage, refused before it is built.
constexpr uint64_t kMaxReadStackDepth = 256;

// One thread of the process. Threads that lived one after another may share a slot (the
// runtime reuses the slot of a thread that is gone); each still has an entry of its own here.
struct Thread {
  int64_t tid = 0;
  std::string name;
  bool exited = false;
  bool known = false;
  uint32_t slot = 0;
  // The last epoch it can have allocated in: the one after the epoch that the snapshot which
  // first said it exited closes (it may have run while that snapshot was taken).
  uint32_t last_epoch = UINT32_MAX;
};

// What one thread holds of a triple's live memory.
struct ThreadPart {
  uint32_t thread = 0;  // index into RunState::threads()
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;
};

// Interpreted code that stack frames name (INTERPRETED_CODE).
struct Code {
  uint32_t language = 0;
  std::string name;  // qualified name
  std::string file;
  int32_t first_line = 0;
  uint32_t table_format = 0;
  std::string table;  // the line table, as the interpreter kept it
  bool known = false;
};

struct Task {
  uint64_t user_id = 0;
  std::string name;
  bool known = false;
};

struct BirthBin {
  uint32_t bin = 0;
  int64_t bytes = 0;
};

// BirthBins: a site's live bytes by birth time, the bins that hold any, in bin order. The first
// is held inline: most sites' live bytes were born in one bin, and a vector would cost each of a
// few hundred thousand sites a heap block besides.
class BirthBins {
 public:
  BirthBins() {}
  BirthBins(const BirthBins&) = delete;
  BirthBins& operator=(const BirthBins&) = delete;
  ~BirthBins();

  size_t size() const { return size_; }
  const BirthBin* begin() const { return data(); }
  const BirthBin* end() const { return data() + size_; }
  const BirthBin& operator[](size_t index) const { return data()[index]; }

  // add() adds `bytes` born in bin `bin`; a bin left holding nothing is dropped.
  void add(uint32_t bin, int64_t bytes);
  // halve() merges the bins in pairs, as the bins' width doubles: bin b becomes b / 2.
  void halve();
  void clear();

 private:
  const BirthBin* data() const { return capacity_ > 1 ? many_ : &one_; }
  BirthBin* data() { return capacity_ > 1 ? many_ : &one_; }

  uint32_t size_ = 0;
  uint32_t capacity_ = 1;
  union {
    BirthBin one_{};
    BirthBin* many_;  // capacity_ > 1
  };
};

// LifetimeHistogram: a site's freed bytes by lifetime (log2 buckets, docs/FORMAT.md), held only once
// something was freed: most sites of a stack-heavy process never free, and 16 counters would cost
// each of them 128 bytes.
class LifetimeHistogram {
 public:
  using Buckets = std::array<uint64_t, internal::kLifetimeBuckets>;

  uint64_t operator[](size_t bucket) const { return buckets_ ? (*buckets_)[bucket] : 0; }
  // add() adds `bytes` freed at a lifetime of bucket `bucket` (< kLifetimeBuckets).
  void add(size_t bucket, uint64_t bytes) {
    if (!buckets_) buckets_ = std::make_unique<Buckets>();
    (*buckets_)[bucket] += bytes;
  }
  bool empty() const { return !buckets_; }

 private:
  std::unique_ptr<Buckets> buckets_;  // null: nothing freed
};

struct Site {
  Domain domain = Domain::kHeap;
  bool known = false;
  uint32_t stack = 0;
  LifetimeHistogram freed_bytes_by_lifetime;
  int64_t live_bytes = 0;   // summed over the site's triples
  int64_t live_blocks = 0;
  // Live bytes by birth time: the bins (of RunState::birth_bin_ns()) that hold any, in bin order.
  // Sparse, as most sites' blocks were born in a few bins: dense bins cost a process with 600 k
  // sites born late in its run a gigabyte.
  BirthBins births;
  uint64_t temporary_blocks = 0;  // blocks freed in the epoch they were born in, so far
  uint64_t first_seen_ns = 0;  // time of the snapshot that defined it
};

// The domains of DeviceMemory::live_bytes, in order.
inline constexpr Domain kDeviceDomains[] = {Domain::kCuda, Domain::kCudaHost, Domain::kCudaManaged, Domain::kC10Cuda};

// What one snapshot says of a device's memory (DEVICES, docs/FORMAT.md).
struct DeviceMemory {
  int device = -1;  // the device's ordinal; -1 when the driver did not say
  // Live bytes of the device domains on it, index: kDeviceDomains' order.
  std::array<uint64_t, 4> live_bytes{};
  uint64_t inner_bytes = 0;     // c10_cuda bytes inside tracked cuda blocks: the caching allocator's reserve in use
  uint64_t reserved_bytes = 0;  // device address space reserved (VMM), not memory
  uint64_t driver_used_bytes = 0, driver_total_bytes = 0;  // cuMemGetInfo as last read; 0 when never

  // Live bytes of `domain` (one of kDeviceDomains) on it.
  int64_t live(Domain domain) const {
    for (size_t d = 0; d < live_bytes.size(); ++d) {
      if (kDeviceDomains[d] == domain) return static_cast<int64_t>(live_bytes[d]);
    }
    return 0;
  }
};

struct EpochActivity {
  uint64_t alloc_count = 0, alloc_bytes = 0, free_count = 0, free_bytes = 0;
};

struct Triple {
  uint32_t site = 0, slot = 0, task = 0;  // slot: of the threads that allocated it
  bool known = false;
  uint64_t alloc_count = 0, alloc_bytes = 0, free_count = 0, free_bytes = 0, split_count = 0;
  EpochActivity last;  // what the latest applied snapshot added
  // Live memory of the slot's later threads, by their birth epochs; the slot's first thread holds
  // the rest. Null while the slot has had one thread, as most have.
  std::unique_ptr<std::vector<ThreadPart>> later_threads;

  int64_t live_bytes() const { return static_cast<int64_t>(alloc_bytes - free_bytes); }
  int64_t live_blocks() const { return static_cast<int64_t>(alloc_count - free_count + split_count); }
};

// What one triple lost, as a reachability scan found it.
struct TripleLoss {
  uint32_t triple = 0;
  uint64_t lost_bytes = 0, lost_blocks = 0;  // directly lost: no pointer to them from anywhere
  uint64_t indirectly_lost_bytes = 0, indirectly_lost_blocks = 0;  // pointed to only from lost blocks
};

// A reachability scan's results (LEAK_CHECK, docs/FORMAT.md).
struct LeakCheck {
  internal::LeakCheckTrigger trigger = internal::LeakCheckTrigger::kTeardown;  // kept as written, known or not
  uint64_t time_ns = 0;     // when the program was stopped, as SnapshotInfo::time_ns
  uint64_t stopped_ns = 0;  // how long it was stopped
  uint64_t threads_stopped = 0;
  uint64_t threads_missed = 0;  // not stopped in time: blocks only they point to show as lost
  uint64_t blocks = 0, bytes = 0;  // live blocks scanned
  uint64_t root_bytes = 0;
  uint64_t memory_bytes = 0;  // what the scan mapped for itself
  uint64_t flags = 0;         // internal::kLeakCheckMmapRoots
  uint32_t snapshot = 0;      // the snapshot that carried it, from 1
  uint32_t epoch = 0;         // the epoch that snapshot closed
  std::vector<TripleLoss> triples;  // those that lost blocks, in id order
  // What the triples a partial read does not keep lost (RunState::keep_sites_of()), summed; its
  // triple is 0.
  TripleLoss not_kept;
};

// Site::births holds at most this many birth bins per site; when a birth lands beyond them, every site's bins are
// merged in pairs and the bin width doubles, so memory stays bounded by the number of sites.
constexpr size_t kMaxBirthBins = 256;
constexpr uint64_t kFirstBirthBinNs = 1000000;  // 1 ms

class RunState {
 public:
  // apply() folds one frame into the state. Throws StreamError (through `reader`) when the frame
  // is malformed or refers to something the stream never defined.
  void apply(const Frame& frame, const StreamReader& reader);

  // begin_forked_stream() ends what a parent's stream read into this state says of the parent
  // alone (its process, snapshots, leak check, threads), keeping its definitions for the forked
  // child's stream that follows (read_run()).
  void begin_forked_stream();

  // keep_sites_of() has the read keep only the sites whose stack `keep` chooses (asked once for
  // each stack, with its id in the stream), with their stacks and triples and all that snapshots
  // say of them; what is program-wide stays whole: live bytes by domain, the start-up stacks, the
  // leak check's totals. A stream whose sites do not fit in memory at once is read so, in passes
  // (report/dump_passes.h). Kept stacks, sites and triples are numbered from 1 in the stream's
  // order; stream_site_id() is a site's id in the stream. Call before the first frame.
  void keep_sites_of(std::function<bool(uint32_t stack)> keep);
  bool partial() const { return static_cast<bool>(keep_); }
  uint32_t stream_site_id(uint32_t site) const { return partial() ? stream_site_ids_[site] : site; }
  // stream_stack_count() counts the stacks the stream has defined so far, kept or not.
  uint64_t stream_stack_count() const { return (partial() ? stack_ids_.size() : stacks_.size()) - 1; }

  bool has_process() const { return has_process_; }
  const ProcessInfo& process() const { return process_; }
  uint32_t snapshot_count() const { return snapshot_count_; }
  const SnapshotInfo& last_snapshot() const { return last_snapshot_; }
  const BudgetTimes& budget_times() const { return budget_times_; }
  const std::vector<Module>& modules() const { return modules_; }
  const ChunkedVector<Stack>& stacks() const { return stacks_; }
  // is_marker_stack() tells whether stack `id` is the one frame `marker` (stream_format.h).
  bool is_marker_stack(uint32_t id, uint64_t marker) const {
    return id < stacks_.size() && stacks_[id].depth == 1 && *frames(stacks_[id]).begin() == marker;
  }
  // startup_stacks() counts the stacks cut at start-up (those holding a start-up marker frame).
  StartupStacks startup_stacks() const;
  // startup_marker() is the start-up marker frame (stream_format.h) stack `id` holds, or 0.
  uint64_t startup_marker(uint32_t id) const;
  StackFrames frames(const Stack& stack) const {
    if (stack.head_depth == 0) return StackFrames(nullptr, nullptr, 0, stack.tail, &stack_nodes_);
    // A head lies within one chunk of the arena: it ends before the chunk does.
    const uint8_t* head = &head_bytes_[stack.head_offset];
    return StackFrames(head, head + (kHeadChunk - stack.head_offset % kHeadChunk), stack.head_depth, stack.tail, &stack_nodes_);
  }
  const std::vector<Thread>& threads() const { return threads_; }
  // for_each_thread_part() calls visit(ThreadPart) for each thread of a triple's slot that holds
  // some of its live memory.
  template <typename Visit>
  void for_each_thread_part(const Triple& triple, Visit&& visit) const;
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<Code>& codes() const { return codes_; }
  const ChunkedVector<Site>& sites() const { return sites_; }
  const ChunkedVector<Triple>& triples() const { return triples_; }
  // leak_check() is the last reachability scan read, if any: a later one supersedes it, a key
  // snapshot does not clear it.
  const std::optional<LeakCheck>& leak_check() const { return leak_check_; }
  // keep_leak_checks_until() has scans made after snapshot `snapshot` (from 1) read and checked but
  // not kept: a report of an earlier snapshot read on to the stream's end for what teardown freed
  // shows the scan as of the snapshot it shows.
  void keep_leak_checks_until(uint32_t snapshot) { leak_check_horizon_ = snapshot; }
  // devices() is what the latest snapshot says of each device's memory; empty without any.
  const std::vector<DeviceMemory>& devices() const { return devices_; }
  // Of a cuda site: the c10_cuda bytes inside its blocks now (INNER_BLOCKS), and whether any ever
  // were (its blocks are then a caching allocator's segments). Kept apart from Site: few sites
  // have any.
  int64_t inner_bytes(uint32_t site) const {
    auto found = inner_bytes_.find(site);
    return found != inner_bytes_.end() ? found->second : 0;
  }
  bool held_inner_blocks(uint32_t site) const { return held_inner_.count(site) != 0; }
  const std::unordered_set<uint32_t>& sites_that_held_inner_blocks() const { return held_inner_; }
  const std::unordered_map<uint32_t, int64_t>& inner_bytes_by_site() const { return inner_bytes_; }

  // release_counters() lets go of the triples and of each site's births and lifetimes, keeping
  // every definition, the leak check and each site's live bytes and blocks: for a reader that has
  // taken what it needs of them and only names sites from then on (an analysis holding a few
  // hundred thousand sites). triples() is empty after it, and no frame can be applied.
  void release_counters();
  // Live bytes per domain now (index: Domain value), kept up to date as counters are applied.
  const std::array<int64_t, internal::kDomainCount>& live_bytes_by_domain() const { return domain_live_bytes_; }
  // Width of the bins of Site::births, from time 0.
  uint64_t birth_bin_ns() const { return birth_bin_ns_; }
  // epoch_start_ns() is when epoch `epoch` began: the time of the snapshot that closed the
  // epoch before it, or 0 for the first epoch of the file and any epoch inherited from a parent.
  uint64_t epoch_start_ns(uint32_t epoch) const;
  // epoch_closed_at() is the epoch that the snapshot taken at `time_s` (its time in ns / 1e9)
  // closed; 0 when no snapshot read was taken then.
  uint32_t epoch_closed_at(double time_s) const;

 private:
  void apply_process(class PayloadCursor& cursor);
  // holds_inherited_definitions() tells whether every definition a forked child's stream takes
  // from its parent's (`inherited_`, from the child's process frame) has been read.
  bool holds_inherited_definitions() const;
  friend void read_run_forked(StreamReader&, uint32_t, RunState*, const std::function<void(const RunState&)>&, int, bool);
  // apply_snapshot() applies a snapshot; a key one (`key`) holds absolute counters and births and
  // repeats every definition, so the cumulative state is cleared first.
  void apply_snapshot(class PayloadCursor& cursor, bool key);
  void apply_leak_check(class PayloadCursor& cursor, uint32_t epoch);
  void apply_devices(class PayloadCursor& cursor);
  void apply_inner_blocks(class PayloadCursor& cursor);
  // store_head() keeps the head frames of a stack and returns their offset: where `known` (the
  // stack as it was) kept them when they take as many bytes, else at the arena's end.
  uint64_t store_head(const std::vector<uint64_t>& head, const Stack* known);
  void clear_cumulative_state();
  // kept_site() and kept_triple() are the local id of a site or triple the stream defined, or 0
  // when a partial read does not keep it (*domain is then its domain); they throw Malformed,
  // naming `what`, when the stream has not defined it.
  uint32_t kept_site(uint64_t id, const char* what, Domain* domain = nullptr) const;
  uint32_t kept_triple(uint64_t id, const char* what, Domain* domain = nullptr) const;

  bool has_process_ = false;
  ProcessInfo process_;
  uint32_t snapshot_count_ = 0;
  SnapshotInfo last_snapshot_;
  BudgetTimes budget_times_;
  std::vector<Module> modules_;
  // Stacks, sites and triples are a few hundred thousand in a stack-heavy process: chunked, so
  // that they grow without being copied.
  ChunkedVector<Stack> stacks_{1};
  ChunkedVector<StackNode> stack_nodes_{1};
  ChunkedVector<uint8_t> head_bytes_;  // every stack's head frames (Stack), none across two chunks
  static constexpr uint64_t kHeadChunk = ChunkedVector<uint8_t>::kChunk;
  std::vector<Thread> threads_{1};
  std::vector<std::vector<uint32_t>> slots_{1};  // slot -> its threads, in order
  std::vector<Task> tasks_{1};
  std::vector<Code> codes_{1};
  ChunkedVector<Site> sites_{1};
  ChunkedVector<Triple> triples_{1};
  std::optional<LeakCheck> leak_check_;
  uint32_t leak_check_horizon_ = UINT32_MAX;
  // What a forked child's stream takes from its parent's: ids of each kind below these.
  struct InheritedDefinitions {
    uint32_t stacks = 0, stack_nodes = 0, sites = 0, triples = 0, tasks = 0, codes = 0, modules = 0;
  } inherited_;
  std::vector<DeviceMemory> devices_;
  std::unordered_map<uint32_t, int64_t> inner_bytes_;  // by site, as the latest snapshot says
  std::unordered_set<uint32_t> held_inner_;            // sites that ever held inner blocks
  // widen_birth_bins() doubles the bins' width (merging every site's bins in pairs) until a birth
  // at `birth_ns` falls within kMaxBirthBins; add_birth() then counts it.
  void widen_birth_bins(uint64_t birth_ns);
  void add_birth(uint32_t site, uint64_t birth_ns, int64_t bytes);
  // apply_thread() reads one THREADS record; thread_at() is the thread of `slot` that could
  // allocate in `epoch`.
  void apply_thread(uint32_t slot_index, int64_t tid, std::string name, uint64_t flags, uint32_t epoch);
  uint32_t thread_at(uint32_t slot, uint32_t epoch) const;

  std::array<int64_t, internal::kDomainCount> domain_live_bytes_{};
  // A partial read's maps from the stream's ids of stacks, sites and triples: 0 for an id not
  // defined yet, else the local id of what is kept, or a mark of what is not (with a site's or a
  // triple's domain). Stack 0, no stack, is kept or not from the start.
  std::function<bool(uint32_t)> keep_;
  ChunkedVector<uint32_t> stack_ids_{1}, site_ids_{1}, triple_ids_{1};
  ChunkedVector<uint32_t> stream_site_ids_{1};  // by local site id
  StartupStacks not_kept_startup_;              // of the stacks not kept
  uint64_t birth_bin_ns_ = kFirstBirthBinNs;
  std::vector<uint32_t> active_triples_;  // triples whose `last` the latest snapshot set
  std::unordered_map<uint32_t, uint64_t> epoch_close_ns_;
};

template <typename Visit>
void RunState::for_each_thread_part(const Triple& triple, Visit&& visit) const {
  const std::vector<uint32_t>& threads = slots_[triple.slot];
  if (!triple.later_threads) {
    if (triple.live_bytes() != 0 || triple.live_blocks() != 0) {
      visit(ThreadPart{threads.front(), triple.live_bytes(), triple.live_blocks()});
    }
    return;
  }
  ThreadPart first{threads.front(), triple.live_bytes(), triple.live_blocks()};
  for (const ThreadPart& later : *triple.later_threads) {
    first.live_bytes -= later.live_bytes;
    first.live_blocks -= later.live_blocks;
  }
  // Births can trail the counters by what other threads did while the snapshot was taken.
  if (first.live_bytes > 0 || first.live_blocks > 0) {
    visit(ThreadPart{first.thread, first.live_bytes > 0 ? first.live_bytes : 0,
                     first.live_blocks > 0 ? first.live_blocks : 0});
  }
  for (const ThreadPart& later : *triple.later_threads) {
    if (later.live_bytes != 0 || later.live_blocks != 0) visit(later);
  }
}

// read_run() applies `path` up to its `at`-th snapshot (1-based; 0 = the last) to *state, calling
// on_snapshot(*state) after each snapshot. Throws StreamError. A torn last frame is reported on
// stderr as a warning.
void read_run(const std::string& path, uint32_t at, RunState* state,
              const std::function<void(const RunState&)>& on_snapshot);

// read_run() from a reader already open; the same contract. Without `warn`, what it would warn
// of is left to an earlier read of the same stream.
void read_run(StreamReader& reader, uint32_t at, RunState* state,
              const std::function<void(const RunState&)>& on_snapshot, bool warn = true);

// sample_interval_of() is the sample option of the stream at `path` (its process frame): 0 for
// exact mode, or when the stream cannot be read (reading it says why).
uint64_t sample_interval_of(const std::string& path);

// load_run() is read_run() into a fresh state.
RunState load_run(const std::string& path, uint32_t at = 0);

}  // namespace leakscope::report

#endif  // LEAKSCOPE_REPORT_RUN_STATE_H_
