#include "core/triple_registry.h"

#include "core/intern_table.h"
#include "core/internal_alloc.h"

namespace leakscope::internal {
namespace {

constinit InternTable<SiteEntry> g_sites;
constinit InternTable<TripleEntry> g_triples;

SiteEntry* site_intern(Domain domain, StackId stack) {
  uint64_t hash = hash_mix((static_cast<uint64_t>(domain) << 32) | raw(stack));
  return g_sites.find_or_insert(
      hash, [&](const SiteEntry* site) { return site->domain == domain && site->stack == stack; },
      [&]() -> SiteEntry* {  // sites are never freed and rarely written: packed, no size-class rounding
        auto* made = static_cast<SiteEntry*>(internal_alloc_permanent(sizeof(SiteEntry)));
        if (made != nullptr) {
          made->domain = domain;
          made->stack = stack;
        }
        return made;
      });
}

uint64_t triple_hash(Domain domain, ThreadSlot thread, TaskId task, StackId stack) {
  return hash_mix((static_cast<uint64_t>(raw(stack)) << 32 | raw(task)) ^
                  hash_mix((static_cast<uint64_t>(raw(thread)) << 8) | static_cast<uint64_t>(domain)));
}

auto triple_match(Domain domain, ThreadSlot thread, TaskId task, StackId stack) {
  return [=](const TripleEntry* triple) {
    return triple->site->stack == stack && triple->thread == thread && triple->task == task &&
           triple->site->domain == domain;
  };
}

}  // namespace

bool triple_registry_init() { return g_sites.init(12) && g_triples.init(12); }

TripleEntry* triple_find(Domain domain, ThreadSlot thread, TaskId task, StackId stack) {
  return g_triples.find(triple_hash(domain, thread, task, stack), triple_match(domain, thread, task, stack));
}

TripleEntry* triple_intern(Domain domain, ThreadSlot thread, TaskId task, StackId stack) {
  uint64_t hash = triple_hash(domain, thread, task, stack);
  auto matches = triple_match(domain, thread, task, stack);
  if (TripleEntry* known = g_triples.find(hash, matches)) return known;
  SiteEntry* site = site_intern(domain, stack);
  if (site == nullptr) return nullptr;
  return g_triples.find_or_insert(hash, matches, [&]() -> TripleEntry* {
    // From a size class, not packed: the class's alignment keeps each triple on cache lines of
    // its own, so threads counting into their own triples of one site never share a line.
    auto* made = static_cast<TripleEntry*>(internal_alloc(sizeof(TripleEntry)));
    if (made != nullptr) {
      made->thread = thread;
      made->task = task;
      made->site = site;
    }
    return made;
  });
}

const TripleEntry* triple_get(TripleId id) { return g_triples.get(raw(id)); }
TripleEntry* triple_get_mutable(TripleId id) { return g_triples.get(raw(id)); }
uint32_t triple_end_id() { return g_triples.end_id(); }
const SiteEntry* site_get(SiteId id) { return g_sites.get(raw(id)); }
uint32_t site_end_id() { return g_sites.end_id(); }

int64_t triple_live_bytes_of_domain(Domain domain) {
  int64_t total = 0;
  uint32_t end = g_triples.end_id();
  for (uint32_t id = 1; id < end; ++id) {
    const TripleEntry* triple = g_triples.get(id);
    if (triple == nullptr || triple->site->domain != domain) continue;
    total += static_cast<int64_t>(triple->alloc_bytes.load(std::memory_order_relaxed) -
                                  triple->free_bytes.load(std::memory_order_relaxed));
  }
  return total;
}

void triple_registry_before_fork() {
  g_triples.before_fork();
  g_sites.before_fork();
}
void triple_registry_after_fork_parent() {
  g_sites.after_fork_parent();
  g_triples.after_fork_parent();
}
void triple_registry_after_fork_child() {
  g_sites.after_fork_child();
  g_triples.after_fork_child();
}

}  // namespace leakscope::internal
