// Internal: the owned hwloc topology handle behind CpuTopology, conversions
// between CpuSet and hwloc bitmaps, and NUMA-node memory binding.
#pragma once

#include <hwloc.h>

#include <cstddef>
#include <optional>

#include "tenferro/cpu/domains/cpu_set.h"

namespace tenferro::cpu::internal {

/// CPUs of an hwloc bitmap (an infinite bitmap is cut at CpuSet::kMaxCpus).
CpuSet cpu_set_from_bitmap(hwloc_const_bitmap_t bitmap);
/// A new hwloc bitmap holding `set`; free it with hwloc_bitmap_free.
hwloc_bitmap_t bitmap_from_cpu_set(const CpuSet& set);

/// A loaded hwloc topology. Loaded topologies are read-only here, which
/// hwloc documents as thread-safe; the handle is destroyed with the object.
class HwlocTopology {
 public:
  explicit HwlocTopology(hwloc_topology_t topology) noexcept : topology_(topology) {}
  ~HwlocTopology();
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;

  hwloc_topology_t get() const noexcept { return topology_; }
  bool is_this_system() const noexcept { return hwloc_topology_is_thissystem(topology_) != 0; }
  /// True when memory can be bound to a node at allocation (real system with
  /// hwloc_alloc_membind support).
  bool supports_node_binding() const noexcept;
  /// `bytes` of page-aligned memory bound to OS node `os_node` (strict
  /// binding), or nullptr. Free with free_node_memory.
  void* allocate_on_node(std::size_t bytes, unsigned os_node) const noexcept;
  void free_node_memory(void* block, std::size_t bytes) const noexcept;
  /// The OS node holding the (touched) pages of [block, block + bytes) when
  /// they all lie on one node; nullopt otherwise or when unknown.
  std::optional<unsigned> node_of(const void* block, std::size_t bytes) const noexcept;

 private:
  hwloc_topology_t topology_;
};

}  // namespace tenferro::cpu::internal
