#include "report/run_state.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/options.h"

namespace leakscope::report {

using namespace leakscope::internal;

namespace {

struct Malformed {
  std::string what;
};

}  // namespace

// PayloadCursor reads varints, strings and sections out of one frame's payload; any overrun is
// Malformed, turned into a StreamError naming the frame by RunState::apply().
class PayloadCursor {
 public:
  PayloadCursor(const uint8_t* begin, const uint8_t* end) : cursor_(begin), end_(end) {}

  uint64_t varint(const char* field) {
    uint64_t value;
    if (!varint_get(&cursor_, end_, &value)) throw Malformed{std::string("truncated ") + field};
    return value;
  }
  uint32_t u32(const char* field) {
    uint64_t value = varint(field);
    if (value > UINT32_MAX) throw Malformed{std::string(field) + " out of range"};
    return static_cast<uint32_t>(value);
  }
  int64_t signed_varint(const char* field) { return zigzag_decode(varint(field)); }
  std::string blob(const char* field) {
    uint64_t size = varint(field);
    if (size > static_cast<uint64_t>(end_ - cursor_)) throw Malformed{std::string("truncated ") + field};
    std::string text(reinterpret_cast<const char*>(cursor_), size);
    cursor_ += size;
    return text;
  }
  // count() reads an element count and rejects one the remaining bytes cannot hold.
  uint64_t count(const char* field) {
    uint64_t value = varint(field);
    if (value > static_cast<uint64_t>(end_ - cursor_)) throw Malformed{std::string("implausible ") + field};
    return value;
  }
  PayloadCursor section(uint64_t size) {
    if (size > static_cast<uint64_t>(end_ - cursor_)) throw Malformed{"section overruns the frame"};
    PayloadCursor inner(cursor_, cursor_ + size);
    cursor_ += size;
    return inner;
  }
  bool done() const { return cursor_ == end_; }

 private:
  const uint8_t* cursor_;
  const uint8_t* end_;
};

bool Module::contains(uint64_t address) const {
  for (const ModuleSegment& segment : segments) {
    uint64_t begin = base + segment.vaddr;
    if (address >= begin && address < begin + segment.memsz) return true;
  }
  return false;
}

namespace {

// slot() returns the entry for `id`: ids are dense from 1, so a new id is the next one and a
// known id is an update (threads are re-sent when they change). Anything else is corruption.
template <typename Items>
auto& slot(Items& items, uint64_t id, const char* what) {
  if (id == 0 || id > items.size()) throw Malformed{std::string("bad ") + what + " id " + std::to_string(id)};
  if (id == items.size()) items.emplace_back();
  return items[id];
}

// In a partial read's map of ids (RunState::keep_sites_of()): what is not kept, the low bits
// saying its domain.
constexpr uint32_t kNotKept = 0x80000000u;

// define() is the entry that a definition of stream id `id` fills: slot() of a whole read; in a
// partial one, through its map `ids`, the kept entry (a new id is kept when `keep`, in a new
// entry), or null for an id not kept, whose map entry becomes `not_kept`.
template <typename Items>
auto define(Items& items, ChunkedVector<uint32_t>* ids, uint64_t id, const char* what, bool keep, uint32_t not_kept)
    -> decltype(&items[0]) {
  if (ids == nullptr) return &slot(items, id, what);
  uint32_t& local = slot(*ids, id, what);
  if (local == 0) {
    if (!keep) {
      local = not_kept;
      return nullptr;
    }
    local = static_cast<uint32_t>(items.size());
    items.emplace_back();
  }
  if ((local & kNotKept) != 0) {
    local = not_kept;
    return nullptr;
  }
  return &items[local];
}

// startup_marker_in() is the start-up marker among `frames` and, in *kept, how many frames come
// before it; 0 when there is none. A marker stands right after the innermost frames kept, so the
// search stops at the depth limit.
template <typename Frames>
uint64_t startup_marker_in(const Frames& frames, uint32_t* kept) {
  uint32_t index = 0;
  for (uint64_t frame : frames) {
    if (internal::is_startup_marker(frame)) {
      *kept = index;
      return frame;
    }
    if (++index > static_cast<uint32_t>(internal::kMaxStackDepth)) break;
  }
  return 0;
}

template <typename Items>
const auto& defined(const Items& items, uint64_t id, const char* what) {
  if (id >= items.size() || !items[id].known) {
    throw Malformed{std::string("refers to undefined ") + what + " " + std::to_string(id)};
  }
  return items[id];
}

}  // namespace

void RunState::apply(const Frame& frame, const StreamReader& reader) {
  PayloadCursor cursor(frame.payload, frame.payload + frame.size);
  try {
    if (frame.type == FrameType::kProcess) {
      if (has_process_) throw Malformed{"second process frame"};
      apply_process(cursor);
    } else {
      if (!has_process_) throw Malformed{"snapshot before the process frame"};
      apply_snapshot(cursor, frame.type == FrameType::kKeySnapshot);
    }
  } catch (const Malformed& malformed) {
    throw reader.error(frame.index, frame.offset, "malformed: " + malformed.what);
  }
}

void RunState::apply_process(PayloadCursor& cursor) {
  process_.leakscope_version = cursor.blob("version");
  process_.pid = static_cast<int64_t>(cursor.varint("pid"));
  process_.ppid = static_cast<int64_t>(cursor.varint("ppid"));
  process_.traced_parent_pid = static_cast<int64_t>(cursor.varint("traced parent"));
  process_.exe = cursor.blob("exe");
  for (uint64_t n = cursor.count("argument count"); n > 0; --n) process_.argv.push_back(cursor.blob("argument"));
  process_.start_realtime_ns = cursor.varint("start time");
  process_.interval_ns = cursor.varint("interval");
  process_.depth = cursor.u32("depth");
  process_.page_size = cursor.varint("page size");
  process_.options = cursor.blob("options");
  process_.first_epoch = cursor.u32("first epoch");
  if (!cursor.done()) {  // streams written before forked children named their parent's have none
    process_.parent_stream = cursor.blob("parent stream");
    process_.parent_snapshots = cursor.varint("parent snapshots");
    for (uint32_t* end : {&inherited_.stacks, &inherited_.stack_nodes, &inherited_.sites, &inherited_.triples,
                          &inherited_.tasks, &inherited_.codes, &inherited_.modules}) {
      *end = cursor.u32("inherited definitions");
    }
  }
  for (size_t at = 0; at < process_.options.size();) {
    size_t end = process_.options.find(',', at);
    if (end == std::string::npos) end = process_.options.size();
    std::string option = process_.options.substr(at, end - at);
    if (option.rfind("sample=", 0) == 0 && !parse_size_bytes(option.c_str() + 7, option.size() - 7, &process_.sample_interval)) {
      throw Malformed{"bad sample option '" + option + "'"};
    }
    at = end + 1;
  }
  has_process_ = true;
}

void RunState::begin_forked_stream() {
  has_process_ = false;
  process_ = ProcessInfo{};
  snapshot_count_ = 0;
  last_snapshot_ = SnapshotInfo{};
  budget_times_ = BudgetTimes{};
  leak_check_.reset();
  epoch_close_ns_.clear();
  // The child's snapshots say every thread again; the parent's other threads are not the child's.
  threads_.resize(1);
  slots_.resize(1);
  for (size_t id = 0; id < sites_.size(); ++id) sites_[id].first_seen_ns = 0;  // inherited: there from the child's start
}

bool RunState::holds_inherited_definitions() const {
  size_t stacks = partial() ? stack_ids_.size() : stacks_.size();
  size_t sites = partial() ? site_ids_.size() : sites_.size();
  size_t triples = partial() ? triple_ids_.size() : triples_.size();
  return stacks >= inherited_.stacks && stack_nodes_.size() >= inherited_.stack_nodes && sites >= inherited_.sites &&
         triples >= inherited_.triples && tasks_.size() >= inherited_.tasks && codes_.size() >= inherited_.codes &&
         modules_.size() >= inherited_.modules;
}

void RunState::keep_sites_of(std::function<bool(uint32_t stack)> keep) {
  keep_ = std::move(keep);
  stack_ids_[0] = keep_(0) ? 0 : kNotKept;
}

namespace {

// kept() is kept_site() or kept_triple() of `items` (`ids` their map when the read is partial).
template <typename Items>
uint32_t kept(const Items& items, const ChunkedVector<uint32_t>* ids, uint64_t id, const char* what, const char* kind,
              Domain* domain) {
  uint32_t local = ids == nullptr ? (id < items.size() && items[id].known ? static_cast<uint32_t>(id) : 0)
                   : id < ids->size() ? (*ids)[id] : 0;
  if (local == 0) throw Malformed{std::string(what) + " undefined " + kind + " " + std::to_string(id)};
  if ((local & kNotKept) == 0) return local;
  if (domain != nullptr) *domain = static_cast<Domain>(local & ~kNotKept);
  return 0;
}

}  // namespace

uint32_t RunState::kept_site(uint64_t id, const char* what, Domain* domain) const {
  return kept(sites_, partial() ? &site_ids_ : nullptr, id, what, "site", domain);
}

uint32_t RunState::kept_triple(uint64_t id, const char* what, Domain* domain) const {
  return kept(triples_, partial() ? &triple_ids_ : nullptr, id, what, "triple", domain);
}

void RunState::clear_cumulative_state() {
  for (size_t id = 0; id < triples_.size(); ++id) {
    Triple& triple = triples_[id];
    triple.alloc_count = triple.alloc_bytes = triple.free_count = triple.free_bytes = triple.split_count = 0;
    triple.later_threads.reset();
  }
  for (size_t id = 0; id < sites_.size(); ++id) {
    sites_[id].live_bytes = sites_[id].live_blocks = 0;
    sites_[id].births.clear();
  }
  domain_live_bytes_ = {};
}

void RunState::apply_snapshot(PayloadCursor& payload, bool key) {
  uint32_t epoch = last_snapshot_.epoch;
  for (uint32_t id : active_triples_) triples_[id].last = EpochActivity{};
  active_triples_.clear();
  if (key) clear_cumulative_state();
  // DEVICES and INNER_BLOCKS are whole states: a snapshot without them has none.
  devices_.clear();
  inner_bytes_.clear();
  while (!payload.done()) {
    uint64_t tag = payload.varint("section tag");
    PayloadCursor cursor = payload.section(payload.varint("section length"));
    switch (static_cast<SectionTag>(tag)) {
      case SectionTag::kInfo: {
        SnapshotInfo& info = last_snapshot_;
        uint32_t closed = cursor.u32("epoch");
        // Each snapshot closes an epoch of its own: an older one is a frame written twice or damage.
        if (snapshot_count_ > 0 && closed <= info.epoch) {
          throw Malformed{"closes epoch " + std::to_string(closed) + ", not after the previous snapshot's " +
                          std::to_string(info.epoch)};
        }
        info.epoch = epoch = closed;
        info.time_ns = cursor.varint("time");
        info.realtime_ns = cursor.varint("wall time");
        info.reason = static_cast<SnapshotReason>(cursor.u32("reason"));
        info.signal_number = cursor.u32("signal");
        info.final = cursor.varint("final") != 0;
        info.rss_bytes = cursor.varint("rss");
        info.pss_bytes = cursor.varint("pss");
        info.anon_bytes = cursor.varint("anon");
        info.file_bytes = cursor.varint("file");
        info.shmem_bytes = cursor.varint("shmem");
        info.swap_bytes = cursor.varint("swap");
        info.hwm_bytes = cursor.varint("hwm");
        info.overhead_bytes = cursor.varint("overhead");
        info.tracked_heap_blocks = cursor.varint("tracked blocks");
        info.reserved_bytes = cursor.done() ? 0 : cursor.varint("reserved");
        info.budget_stage = cursor.done() ? 0 : cursor.u32("budget stage");
        info.peak_overhead_bytes = cursor.done() ? 0 : cursor.varint("peak overhead");
        info.device_tracking = cursor.done() ? internal::DeviceTracking::kNotAsked
                                             : static_cast<internal::DeviceTracking>(cursor.u32("device tracking"));
        if (info.budget_stage >= 1 && !budget_times_.coarse_stacks_ns) budget_times_.coarse_stacks_ns = info.time_ns;
        if (info.budget_stage >= 2 && !budget_times_.counting_only_ns) budget_times_.counting_only_ns = info.time_ns;
        epoch_close_ns_[epoch] = info.time_ns;
        break;
      }
      case SectionTag::kModuleLoads:
        for (uint64_t n = cursor.count("module count"); n > 0; --n) {
          Module module;
          module.id = cursor.u32("module id");
          module.base = cursor.varint("module base");
          module.path = cursor.blob("module path");
          module.build_id = cursor.blob("build id");
          for (uint64_t s = cursor.count("segment count"); s > 0; --s) {
            ModuleSegment segment;
            segment.vaddr = cursor.varint("segment address");
            segment.memsz = cursor.varint("segment size");
            segment.file_offset = cursor.varint("segment offset");
            segment.flags = cursor.u32("segment flags");
            module.segments.push_back(segment);
          }
          module.load_ns = cursor.varint("load time");
          module.load_epoch = cursor.u32("load epoch");
          if (key && module.id < modules_.size()) continue;  // a key snapshot repeats what is known
          if (module.id != modules_.size()) throw Malformed{"module ids out of order"};
          modules_.push_back(std::move(module));
        }
        break;
      case SectionTag::kModuleUnloads:
        for (uint64_t n = cursor.count("unload count"); n > 0; --n) {
          uint32_t id = cursor.u32("module id");
          if (id >= modules_.size()) throw Malformed{"unload of undefined module " + std::to_string(id)};
          modules_[id].unloaded = true;
          modules_[id].unload_ns = cursor.varint("unload time");
          modules_[id].unload_epoch = cursor.u32("unload epoch");
        }
        break;
      case SectionTag::kStackNodes: {
        uint64_t count = cursor.count("node count");
        uint64_t id = cursor.varint("first node id");
        if (id == 0 || id > stack_nodes_.size()) throw Malformed{"bad stack node id " + std::to_string(id)};
        for (; count > 0; --count, ++id) {
          uint64_t parent_distance = cursor.varint("node parent");
          if (parent_distance == 0 || parent_distance > id) throw Malformed{"stack node " + std::to_string(id) + " has a bad parent"};
          StackNode node;
          node.parent = static_cast<uint32_t>(id - parent_distance);
          node.depth = node.parent == 0 ? 1 : stack_nodes_[node.parent].depth + 1;
          if (node.depth > kMaxReadStackDepth) throw Malformed{"stack deeper than " + std::to_string(kMaxReadStackDepth) + " frames"};
          uint64_t parent_frame = node.parent == 0 ? 0 : stack_nodes_[node.parent].frame;
          node.frame = parent_frame + static_cast<uint64_t>(cursor.signed_varint("node frame"));
          if (id == stack_nodes_.size()) {
            stack_nodes_.push_back(node);
          } else {
            stack_nodes_[id] = node;  // a key snapshot says every node again
          }
        }
        break;
      }
      case SectionTag::kStacks: {
        uint64_t id = 0;
        std::vector<uint64_t> previous, head;  // head frames are differences from the previous stack's
        for (uint64_t n = cursor.count("stack count"); n > 0; --n) {
          id += cursor.varint("stack id");
          bool first_definition = partial() && id == stack_ids_.size();
          Stack* stack = define(stacks_, partial() ? &stack_ids_ : nullptr, id, "stack",
                                first_definition && keep_(static_cast<uint32_t>(id)), kNotKept);
          uint64_t head_depth = cursor.count("stack depth");
          if (head_depth > kMaxReadStackDepth) throw Malformed{"stack deeper than " + std::to_string(kMaxReadStackDepth) + " frames"};
          bool known = stack != nullptr && stack->depth != 0;
          head.resize(head_depth);
          for (uint64_t i = 0; i < head_depth; ++i) {
            uint64_t base = i < previous.size() ? previous[i] : i > 0 ? head[i - 1] : 0;
            head[i] = base + static_cast<uint64_t>(cursor.signed_varint("frame"));
          }
          uint64_t tail = cursor.varint("stack tail node");
          if (tail >= stack_nodes_.size()) throw Malformed{"stack refers to undefined node " + std::to_string(tail)};
          uint64_t depth = head_depth + (tail == 0 ? 0 : stack_nodes_[tail].depth);
          if (depth > kMaxReadStackDepth) throw Malformed{"stack deeper than " + std::to_string(kMaxReadStackDepth) + " frames"};
          if (depth == 0) throw Malformed{"empty stack " + std::to_string(id)};
          if (stack == nullptr) {
            if (first_definition) {  // counted among the start-up stacks all the same
              std::vector<uint64_t> frames = head;
              for (uint64_t node = tail; node != 0; node = stack_nodes_[node].parent) frames.push_back(stack_nodes_[node].frame);
              uint32_t kept = 0;
              if (startup_marker_in(frames, &kept) != 0) {
                ++not_kept_startup_.stacks;
                not_kept_startup_.kept_frames = std::max(not_kept_startup_.kept_frames, kept);
              }
            }
            previous.swap(head);
            continue;
          }
          // A key snapshot says a known stack again: its head goes back where it was.
          stack->head_offset = store_head(head, known ? stack : nullptr);
          stack->head_depth = static_cast<uint32_t>(head_depth);
          stack->tail = static_cast<uint32_t>(tail);
          stack->depth = static_cast<uint32_t>(depth);
          if (!known) stack->first_epoch = epoch;
          previous.swap(head);
        }
        break;
      }
      case SectionTag::kThreads:
        for (uint64_t n = cursor.count("thread count"); n > 0; --n) {
          uint32_t slot_index = cursor.u32("thread slot");
          int64_t tid = static_cast<int64_t>(cursor.varint("tid"));
          std::string name = cursor.blob("thread name");
          apply_thread(slot_index, tid, std::move(name), cursor.varint("thread flags"), epoch);
        }
        break;
      case SectionTag::kInterpretedCode:
        for (uint64_t n = cursor.count("code count"); n > 0; --n) {
          Code& code = slot(codes_, cursor.u32("code id"), "code");
          code.language = cursor.u32("code language");
          code.name = cursor.blob("code name");
          code.file = cursor.blob("code file");
          code.first_line = static_cast<int32_t>(cursor.signed_varint("code first line"));
          code.table_format = cursor.u32("line table format");
          code.table = cursor.blob("line table");
          code.known = true;
        }
        break;
      case SectionTag::kTasks:
        for (uint64_t n = cursor.count("task count"); n > 0; --n) {
          Task& task = slot(tasks_, cursor.u32("task id"), "task");
          task.user_id = cursor.varint("task user id");
          task.name = cursor.blob("task name");
          task.known = true;
        }
        break;
      case SectionTag::kSites:
        for (uint64_t n = cursor.count("site count"), id = 0, stack = 0; n > 0; --n) {
          id += cursor.varint("site id");
          uint32_t domain = cursor.u32("domain");
          if (domain >= static_cast<uint32_t>(kDomainCount)) throw Malformed{"unknown domain " + std::to_string(domain)};
          stack += static_cast<uint64_t>(cursor.signed_varint("site stack"));
          uint32_t local_stack = stack > UINT32_MAX ? 0
                                 : !partial()      ? static_cast<uint32_t>(stack)
                                 : stack < stack_ids_.size() ? stack_ids_[stack] : 0;
          bool defined_stack = stack <= UINT32_MAX && (stack == 0 || (!partial() ? stack < stacks_.size() && stacks_[stack].depth != 0
                                                                                   : local_stack != 0));
          if (!defined_stack) throw Malformed{"site refers to undefined stack " + std::to_string(stack)};
          bool first_definition = partial() && id == site_ids_.size();
          Site* site = define(sites_, partial() ? &site_ids_ : nullptr, id, "site",
                              first_definition && (local_stack & kNotKept) == 0, kNotKept | domain);
          if (site == nullptr) continue;
          if (partial() && stream_site_ids_.size() < sites_.size()) stream_site_ids_.push_back(static_cast<uint32_t>(id));
          site->domain = static_cast<Domain>(domain);
          site->stack = local_stack;
          if (!site->known) site->first_seen_ns = last_snapshot_.time_ns;
          site->known = true;
        }
        break;
      case SectionTag::kTriples:
        for (uint64_t n = cursor.count("triple count"), id = 0, site = 0; n > 0; --n) {
          id += cursor.varint("triple id");
          site += static_cast<uint64_t>(cursor.signed_varint("triple site"));
          if (site > UINT32_MAX) throw Malformed{"refers to undefined site " + std::to_string(site)};
          uint32_t thread_slot = cursor.u32("triple thread");
          uint32_t task = cursor.u32("triple task");
          Domain domain = Domain::kHeap;
          uint32_t local_site = kept_site(site, "refers to", &domain);
          if (thread_slot == 0 || thread_slot >= slots_.size()) {
            throw Malformed{"refers to undefined thread " + std::to_string(thread_slot)};
          }
          if (task != 0) defined(tasks_, task, "task");
          bool first_definition = partial() && id == triple_ids_.size();
          Triple* triple = define(triples_, partial() ? &triple_ids_ : nullptr, id, "triple",
                                  first_definition && local_site != 0, kNotKept | static_cast<uint32_t>(domain));
          if (triple == nullptr) continue;
          triple->site = local_site;
          triple->slot = thread_slot;
          triple->task = task;
          triple->known = true;
        }
        break;
      case SectionTag::kCounters: {
        uint64_t id = 0;
        for (uint64_t n = cursor.count("counter count"); n > 0; --n) {
          id += cursor.varint("triple id delta");
          Domain not_kept = Domain::kHeap;
          uint32_t local = kept_triple(id, "counters for", &not_kept);
          EpochActivity last;
          last.alloc_count = cursor.varint("alloc count");
          last.alloc_bytes = cursor.varint("alloc bytes");
          last.free_count = cursor.varint("free count");
          last.free_bytes = cursor.varint("free bytes");
          uint64_t split = cursor.varint("split count");
          if (local == 0) {
            domain_live_bytes_[static_cast<size_t>(not_kept)] += static_cast<int64_t>(last.alloc_bytes - last.free_bytes);
            continue;
          }
          Triple& triple = triples_[local];
          active_triples_.push_back(local);
          triple.last = last;
          triple.alloc_count += triple.last.alloc_count;
          triple.alloc_bytes += triple.last.alloc_bytes;
          triple.free_count += triple.last.free_count;
          triple.free_bytes += triple.last.free_bytes;
          triple.split_count += split;
          Site& site = sites_[triple.site];
          site.live_bytes += static_cast<int64_t>(triple.last.alloc_bytes - triple.last.free_bytes);
          domain_live_bytes_[static_cast<size_t>(site.domain)] += static_cast<int64_t>(triple.last.alloc_bytes - triple.last.free_bytes);
          site.live_blocks += static_cast<int64_t>(triple.last.alloc_count - triple.last.free_count + split);
        }
        break;
      }
      case SectionTag::kBirths:
        for (uint64_t n = cursor.count("birth count"); n > 0; --n) {
          uint64_t triple = cursor.u32("birth triple");
          uint64_t birth_epoch = cursor.u32("birth epoch");
          int64_t bytes = cursor.signed_varint("birth bytes");
          int64_t blocks = cursor.signed_varint("birth blocks");
          uint32_t local = kept_triple(triple, "births for");
          uint64_t birth_ns = epoch_start_ns(static_cast<uint32_t>(birth_epoch));
          // Bins widen for every birth, kept or not: a partial read's bins are a whole one's.
          widen_birth_bins(birth_ns);
          if (local == 0) continue;
          Triple& born = triples_[local];
          add_birth(born.site, birth_ns, bytes);
          // Which thread of a shared slot these bytes are: the one alive in their birth epoch.
          if (slots_[born.slot].size() > 1) {
            uint32_t thread = thread_at(born.slot, static_cast<uint32_t>(birth_epoch));
            if (thread != slots_[born.slot].front()) {
              if (!born.later_threads) born.later_threads = std::make_unique<std::vector<ThreadPart>>();
              std::vector<ThreadPart>& later = *born.later_threads;
              auto part = std::find_if(later.begin(), later.end(), [&](const ThreadPart& each) { return each.thread == thread; });
              if (part == later.end()) part = later.insert(part, ThreadPart{thread, 0, 0});
              part->live_bytes += bytes;
              part->live_blocks += blocks;
            }
          }
        }
        break;
      case SectionTag::kLifetimes:
        for (uint64_t n = cursor.count("lifetime count"); n > 0; --n) {
          uint32_t local = kept_site(cursor.u32("site id"), "lifetimes for");
          uint32_t mask = cursor.u32("bucket mask");
          for (int b = 0; b < kLifetimeBuckets; ++b) {
            if ((mask & (1u << b)) == 0) continue;
            uint64_t bytes = cursor.varint("lifetime bytes");
            if (local != 0) sites_[local].freed_bytes_by_lifetime.add(b, bytes);
          }
        }
        break;
      case SectionTag::kTemporaries:
        for (uint64_t n = cursor.count("temporary count"); n > 0; --n) {
          uint32_t local = kept_site(cursor.u32("site id"), "temporaries for");
          uint64_t blocks = cursor.varint("temporary blocks");
          if (local != 0) sites_[local].temporary_blocks += blocks;
        }
        break;
      case SectionTag::kLeakCheck:
        apply_leak_check(cursor, epoch);
        break;
      case SectionTag::kDevices:
        apply_devices(cursor);
        break;
      case SectionTag::kInnerBlocks:
        apply_inner_blocks(cursor);
        break;
      default:
        break;  // a section from a newer writer: skipped by design
    }
  }
  ++snapshot_count_;
}

void RunState::apply_devices(PayloadCursor& cursor) {
  for (uint64_t n = cursor.count("device count"); n > 0; --n) {
    DeviceMemory device;
    uint64_t ordinal = cursor.varint("device ordinal");
    if (ordinal > 1024) throw Malformed{"device ordinal " + std::to_string(ordinal) + " out of range"};
    device.device = static_cast<int>(ordinal) - 1;
    for (uint64_t& bytes : device.live_bytes) bytes = cursor.varint("device live bytes");
    device.inner_bytes = cursor.varint("device inner bytes");
    device.reserved_bytes = cursor.varint("device reserved bytes");
    device.driver_used_bytes = cursor.varint("driver used bytes");
    device.driver_total_bytes = cursor.varint("driver total bytes");
    devices_.push_back(device);
  }
}

void RunState::apply_inner_blocks(PayloadCursor& cursor) {
  for (uint64_t n = cursor.count("inner block count"); n > 0; --n) {
    uint32_t local = kept_site(cursor.u32("site id"), "inner blocks for");
    int64_t bytes = static_cast<int64_t>(cursor.varint("inner bytes"));
    cursor.varint("inner blocks");
    if (local == 0) continue;
    inner_bytes_[local] = bytes;
    held_inner_.insert(local);
  }
}

void RunState::apply_leak_check(PayloadCursor& cursor, uint32_t epoch) {
  LeakCheck check;
  check.trigger = static_cast<LeakCheckTrigger>(cursor.u32("leak check trigger"));
  check.time_ns = cursor.varint("leak check time");
  check.stopped_ns = cursor.varint("leak check stop time");
  check.threads_stopped = cursor.varint("threads stopped");
  check.threads_missed = cursor.varint("threads missed");
  check.blocks = cursor.varint("blocks scanned");
  check.bytes = cursor.varint("bytes scanned");
  check.root_bytes = cursor.varint("root bytes");
  check.memory_bytes = cursor.varint("leak check memory");
  check.flags = cursor.varint("leak check flags");
  check.snapshot = snapshot_count_ + 1;
  check.epoch = epoch;
  uint64_t id = 0;
  for (uint64_t n = cursor.count("leak check count"); n > 0; --n) {
    uint64_t delta = cursor.varint("leak check triple id");
    if (delta == 0 || id + delta < id) throw Malformed{"leak check lists its triples out of order"};
    id += delta;
    TripleLoss loss;
    loss.triple = kept_triple(id, "leak check for");
    loss.lost_bytes = cursor.varint("lost bytes");
    loss.lost_blocks = cursor.varint("lost blocks");
    loss.indirectly_lost_bytes = cursor.varint("indirectly lost bytes");
    loss.indirectly_lost_blocks = cursor.varint("indirectly lost blocks");
    if (loss.triple != 0) {
      check.triples.push_back(loss);
      continue;
    }
    check.not_kept.lost_bytes += loss.lost_bytes;
    check.not_kept.lost_blocks += loss.lost_blocks;
    check.not_kept.indirectly_lost_bytes += loss.indirectly_lost_bytes;
    check.not_kept.indirectly_lost_blocks += loss.indirectly_lost_blocks;
  }
  if (check.snapshot <= leak_check_horizon_) leak_check_ = std::move(check);
}

uint64_t RunState::store_head(const std::vector<uint64_t>& head, const Stack* known) {
  uint8_t bytes[kMaxReadStackDepth * kMaxVarintSize];
  uint8_t* end = bytes;
  uint64_t before = 0;
  for (uint64_t frame : head) {
    end = varint_put(end, zigzag_encode(static_cast<int64_t>(frame - before)));
    before = frame;
  }
  size_t size = static_cast<size_t>(end - bytes);
  if (known != nullptr && known->head_depth == head.size()) {
    if (head.empty()) return known->head_offset;
    uint8_t* old = &head_bytes_[known->head_offset];
    const uint8_t* old_end = old;
    const uint8_t* chunk_end = old + (kHeadChunk - known->head_offset % kHeadChunk);
    for (size_t i = 0; i < head.size(); ++i) {
      uint64_t delta = 0;
      varint_get(&old_end, chunk_end, &delta);
    }
    if (static_cast<size_t>(old_end - old) == size) {
      std::copy(bytes, end, old);
      return known->head_offset;
    }
  }
  // A head never lies across two chunks, so that it is read through one pointer.
  uint64_t at = head_bytes_.size();
  if (size > kHeadChunk - at % kHeadChunk) at += kHeadChunk - at % kHeadChunk;
  head_bytes_.grow(at + size);
  if (size != 0) std::copy(bytes, end, &head_bytes_[at]);
  return at;
}

void RunState::apply_thread(uint32_t slot_index, int64_t tid, std::string name, uint64_t flags, uint32_t epoch) {
  if (slot_index == 0 || slot_index > slots_.size()) throw Malformed{"bad thread id " + std::to_string(slot_index)};
  if (slot_index == slots_.size()) slots_.emplace_back();
  std::vector<uint32_t>& threads = slots_[slot_index];
  bool exited = (flags & internal::kThreadExited) != 0;
  // A new thread in the slot: flagged so, or (after damage the reader passed over) a different
  // tid where the slot's thread had exited.
  bool follows = threads.empty() || (flags & internal::kThreadFollowsAnother) != 0 ||
                 (threads_[threads.back()].exited && threads_[threads.back()].tid != tid);
  if (follows) {
    if (!threads.empty()) {
      Thread& before = threads_[threads.back()];
      before.exited = true;
      if (before.last_epoch == UINT32_MAX) before.last_epoch = epoch;  // its exit was passed over
    }
    threads.push_back(static_cast<uint32_t>(threads_.size()));
    threads_.emplace_back();
  }
  Thread& thread = threads_[threads.back()];
  thread.slot = slot_index;
  thread.tid = tid;
  thread.name = std::move(name);
  // It may have lived, allocated and exited while this snapshot was being taken, in the epoch
  // after the one the snapshot closes; the slot's next thread starts after a later snapshot.
  if (exited && !thread.exited) thread.last_epoch = epoch + 1;
  thread.exited = exited;
  thread.known = true;
}

uint32_t RunState::thread_at(uint32_t slot, uint32_t epoch) const {
  const std::vector<uint32_t>& threads = slots_[slot];
  for (uint32_t thread : threads) {
    if (threads_[thread].last_epoch >= epoch) return thread;
  }
  return threads.back();
}

BirthBins::~BirthBins() {
  if (capacity_ > 1) delete[] many_;
}

void BirthBins::clear() {
  if (capacity_ > 1) delete[] many_;
  size_ = 0;
  capacity_ = 1;
  one_ = {};
}

void BirthBins::add(uint32_t bin, int64_t bytes) {
  BirthBin* bins = data();
  // Births mostly land in the latest bin.
  size_t at = size_;
  if (size_ != 0 && bins[size_ - 1].bin >= bin) {
    at = static_cast<size_t>(std::lower_bound(bins, bins + size_, bin, [](const BirthBin& each, uint32_t wanted) {
                               return each.bin < wanted;
                             }) - bins);
  }
  if (at == size_ || bins[at].bin != bin) {
    if (size_ == capacity_) {
      BirthBin* grown = new BirthBin[2 * capacity_];
      std::copy(bins, bins + size_, grown);
      if (capacity_ > 1) delete[] many_;
      many_ = grown;
      capacity_ *= 2;
      bins = many_;
    }
    std::copy_backward(bins + at, bins + size_, bins + size_ + 1);
    bins[at] = BirthBin{bin, 0};
    ++size_;
  }
  bins[at].bytes += bytes;
  if (bins[at].bytes == 0) {
    std::copy(bins + at + 1, bins + size_, bins + at);
    --size_;
  }
}

void BirthBins::halve() {
  BirthBin* bins = data();
  size_t merged = 0;
  for (size_t i = 0; i < size_; ++i) {
    if (merged != 0 && bins[merged - 1].bin == bins[i].bin / 2) {
      bins[merged - 1].bytes += bins[i].bytes;
    } else {
      bins[merged++] = BirthBin{bins[i].bin / 2, bins[i].bytes};
    }
  }
  size_ = static_cast<uint32_t>(merged);
}

void RunState::widen_birth_bins(uint64_t birth_ns) {
  while (birth_ns / birth_bin_ns_ >= kMaxBirthBins) {
    for (size_t id = 0; id < sites_.size(); ++id) sites_[id].births.halve();
    birth_bin_ns_ *= 2;
  }
}

void RunState::add_birth(uint32_t site, uint64_t birth_ns, int64_t bytes) {
  sites_[site].births.add(static_cast<uint32_t>(birth_ns / birth_bin_ns_), bytes);
}

uint64_t RunState::startup_marker(uint32_t id) const {
  uint32_t kept = 0;
  return id < stacks_.size() ? startup_marker_in(frames(stacks_[id]), &kept) : 0;
}

StartupStacks RunState::startup_stacks() const {
  StartupStacks startup;
  for (size_t id = 0; id < stacks_.size(); ++id) {
    const Stack& stack = stacks_[id];
    uint32_t kept = 0;
    if (startup_marker_in(frames(stack), &kept) == 0) continue;
    ++startup.stacks;
    startup.kept_frames = std::max(startup.kept_frames, kept);
  }
  startup.stacks += not_kept_startup_.stacks;
  startup.kept_frames = std::max(startup.kept_frames, not_kept_startup_.kept_frames);
  return startup;
}

void RunState::release_counters() {
  triples_ = ChunkedVector<Triple>();
  active_triples_ = {};
  for (size_t id = 0; id < sites_.size(); ++id) {
    sites_[id].births.clear();
    sites_[id].freed_bytes_by_lifetime = LifetimeHistogram();
  }
}

uint64_t RunState::epoch_start_ns(uint32_t epoch) const {
  if (epoch == 0) return 0;
  auto found = epoch_close_ns_.find(epoch - 1);
  return found == epoch_close_ns_.end() ? 0 : found->second;
}

uint32_t RunState::epoch_closed_at(double time_s) const {
  for (const auto& [epoch, close_ns] : epoch_close_ns_) {
    if (static_cast<double>(close_ns) / 1e9 == time_s) return epoch;
  }
  return 0;
}

void read_run(const std::string& path, uint32_t at, RunState* state,
              const std::function<void(const RunState&)>& on_snapshot) {
  StreamReader reader(path);
  read_run(reader, at, state, on_snapshot);
}

// parent_stream_path() is where a forked child's stream at `child` finds its parent's stream,
// written at `parent`: there, or, when the streams were moved together, beside the child's.
std::string parent_stream_path(const std::string& child, const std::string& parent) {
  std::error_code error;
  if (std::filesystem::exists(parent, error)) return parent;
  std::filesystem::path beside = std::filesystem::path(child).parent_path() / std::filesystem::path(parent).filename();
  return std::filesystem::exists(beside, error) ? beside.string() : parent;
}

// read_run_forked() is read_run() of a stream `depth` forks below the one read first.
void read_run_forked(StreamReader& reader, uint32_t at, RunState* state,
                     const std::function<void(const RunState&)>& on_snapshot, int depth, bool warn);

// A chain of forked children deeper than this is damage.
constexpr int kMaxForkDepth = 32;

void read_run_forked(StreamReader& reader, uint32_t at, RunState* state,
                     const std::function<void(const RunState&)>& on_snapshot, int depth, bool warn) {
  const std::string& path = reader.path();
  Frame frame;
  while ((at == 0 || state->snapshot_count() < at) && reader.next(&frame)) {
    if (frame.type == FrameType::kProcess && !state->has_process()) {
      RunState child;
      child.apply(frame, reader);
      const ProcessInfo& process = child.process();
      if (!process.parent_stream.empty()) {
        // A forked child: its parent's stream holds what the parent had defined before the fork.
        std::string why;
        try {
          if (depth >= kMaxForkDepth) throw StreamError("forked from more than " + std::to_string(kMaxForkDepth) + " processes");
          StreamReader parent(parent_stream_path(path, process.parent_stream));
          read_run_forked(parent, static_cast<uint32_t>(process.parent_snapshots), state, [](const RunState&) {}, depth + 1, warn);
          if (!parent.damaged().empty()) why = "it is damaged before the fork";
        } catch (const StreamError& error) {
          why = error.what();
        }
        state->inherited_ = child.inherited_;
        if (why.empty() && !state->holds_inherited_definitions()) why = "it does not hold what the parent had defined";
        if (!why.empty()) {
          throw StreamError(path + ": the stream of a process forked from pid " + std::to_string(process.traced_parent_pid) +
                            " needs its parent's, " + process.parent_stream + ", for what it inherited; it cannot be read (" +
                            why + ")");
        }
        state->begin_forked_stream();
      }
    }
    state->apply(frame, reader);
    if (frame.type != FrameType::kProcess) on_snapshot(*state);
  }
  if (!state->has_process()) throw StreamError(path + ": no complete process frame (the file is truncated)");
  if (warn) {
    if (reader.torn() && !reader.being_written()) {
      std::fprintf(stderr, "leakscope: warning: %s: last frame torn at offset %llu (the process was killed while writing it, or is writing it now); ignored\n",
                   path.c_str(), static_cast<unsigned long long>(reader.torn_offset()));
    }
    for (const DamagedSpan& span : reader.damaged()) {
      std::string passed = span.frames_passed == 0 ? ""
                           : span.frames_passed == 1 ? ", and 1 intact frame after it"
                                                     : ", and " + std::to_string(span.frames_passed) + " intact frames after it";
      if (span.resumed) {
        std::fprintf(stderr, "leakscope: warning: %s: damaged from offset %llu to %llu (%s)%s lost; read on from the key "
                     "snapshot there\n", path.c_str(), static_cast<unsigned long long>(span.begin),
                     static_cast<unsigned long long>(span.end), span.fault.c_str(), passed.c_str());
      } else {
        std::fprintf(stderr, "leakscope: warning: %s: damaged from offset %llu (%s)%s; no key snapshot follows, so the "
                     "stream is read up to there\n", path.c_str(), static_cast<unsigned long long>(span.begin),
                     span.fault.c_str(), passed.c_str());
      }
    }
  }
  if (state->snapshot_count() == 0) {
    throw StreamError(path + ": holds no snapshot that can be read (the process has not written its first yet, ended "
                             "before it, or the first is damaged)");
  }
  if (at != 0 && state->snapshot_count() < at) {
    throw StreamError(path + ": has " + std::to_string(state->snapshot_count()) + " snapshots; --at " +
                      std::to_string(at) + " is beyond them");
  }
}

void read_run(StreamReader& reader, uint32_t at, RunState* state, const std::function<void(const RunState&)>& on_snapshot,
              bool warn) {
  read_run_forked(reader, at, state, on_snapshot, 0, warn);
}

uint64_t sample_interval_of(const std::string& path) {
  try {
    StreamReader reader(path);
    Frame frame;
    if (!reader.next(&frame) || frame.type != FrameType::kProcess) return 0;
    RunState state;
    state.apply(frame, reader);
    return state.process().sample_interval;
  } catch (const StreamError&) {
    return 0;
  }
}

RunState load_run(const std::string& path, uint32_t at) {
  RunState state;
  read_run(path, at, &state, [](const RunState&) {});
  return state;
}

}  // namespace leakscope::report
