// File: device_table.h
//
// Live blocks of the device domains (cuda, cuda_host, cuda_managed, c10_cuda), kept apart from the
// heap table for two reasons: their addresses overlap the heap's and each other's (a c10_cuda
// block starts where its cuda segment does; a host range registered with the driver is a heap
// block too), and the driver frees them by other keys than an address (a VMM allocation by its
// handle, every block of a context at once when the context is destroyed). Blocks are few next to
// heap blocks (a driver call costs microseconds), so one open-addressing table under one lock is
// enough. The snapshot writer reads it for births and for the device section (device_section.h).
#ifndef LEAKSCOPE_CORE_DEVICE_TABLE_H_
#define LEAKSCOPE_CORE_DEVICE_TABLE_H_

#include <stdint.h>

#include "core/types.h"

namespace leakscope::internal {

// What a block's key is: each kind is a key space of its own.
enum class DeviceKey : uint8_t {
  kEmpty = 0,
  kLayeredAddress = 1,  // a block of an inner layer (c10_cuda) by its address
  kDriverAddress = 2,   // device, managed or host memory the driver handed out, by its address
  kDriverHandle = 3,    // physical memory of a VMM allocation, by its handle
  kReservedRange = 4,   // device address space reserved (VMM), not memory: in no triple
};

struct DeviceBlock {
  uint64_t key;       // the address or the handle
  uint64_t size;
  uintptr_t begin;    // where its bytes are seen in the address space; 0: not mapped (yet)
  uint64_t context;   // the driver's context it was made in, 0 when none
  TripleId triple;    // TripleId::kNone for a reserved range
  Epoch birth;
  DeviceKey kind;
  Domain domain;
  int16_t device;     // the device's ordinal, -1 when unknown
  bool released;      // a VMM handle released while mapped: it ends when unmapped
};

// device_table_insert() adds a block. A block already under the same kind and key (its end was
// never seen) is given back in *replaced and true is returned, so that the caller counts it freed.
// Thread-safe; not signal-safe; false also when memory is exhausted (the block is then not kept).
bool device_table_insert(const DeviceBlock& block, DeviceBlock* replaced);

// device_table_remove() takes the block of `kind` at `key` out; false when it is not tracked.
bool device_table_remove(DeviceKey kind, uint64_t key, DeviceBlock* removed);

// device_table_remove_context() takes out every block of the driver's `context` and calls
// on_removed(block, data) for each under the table's lock (on_removed must not call out). Returns
// how many were removed.
int device_table_remove_context(uint64_t context, void (*on_removed)(const DeviceBlock&, void*), void* data);

// device_table_remove_all() takes out every block, likewise (a fork child holds none of them).
int device_table_remove_all(void (*on_removed)(const DeviceBlock&, void*), void* data);

// device_table_map() notes that the VMM allocation `handle` is mapped at `begin` (its first mapping
// is kept: the one its bytes are looked up at).
void device_table_map(uint64_t handle, uintptr_t begin);

// device_table_release() ends the VMM allocation `handle`: it is taken out and returned in
// *removed (true), unless it is still mapped, when the driver keeps its memory until the mapping
// goes: it is then marked released and stays (false).
bool device_table_release(uint64_t handle, DeviceBlock* removed);

// device_table_unmap() forgets the mappings of every handle mapped in [begin, begin + size); a
// handle released before is taken out, and on_removed(block, data) called for it under the lock.
void device_table_unmap(uintptr_t begin, uint64_t size, void (*on_removed)(const DeviceBlock&, void*), void* data);

// device_table_visit() calls visit(blocks, count, data) with every block, under the lock (the
// snapshot writer: `visit` must not call out).
void device_table_visit(void (*visit)(const DeviceBlock* blocks, uint32_t count, void* data), void* data);

void device_table_before_fork();
void device_table_after_fork_parent();
void device_table_after_fork_child();

}  // namespace leakscope::internal

#endif  // LEAKSCOPE_CORE_DEVICE_TABLE_H_
