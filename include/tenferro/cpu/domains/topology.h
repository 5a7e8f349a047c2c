// CpuTopology: the machine as this process may use it, discovered through
// hwloc from the real system or from an injected XML/synthetic description.
//
// Note [Allowed CPUs]
// Resource domains are built only from CPUs the process may run on, so MPI
// ranks bound to disjoint CPUs get disjoint domains: the topology's allowed
// cpuset (cgroup cpuset restrictions) intersected with the process's CPU
// binding (sched_setaffinity / taskset / mpirun --bind-to). hwloc's allowed
// cpuset alone misses taskset, so the binding is read separately with
// hwloc_get_cpubind(HWLOC_CPUBIND_PROCESS), the union over the process's
// threads. An injected description has no
// process: TopologySource::process_cpus simulates the binding instead.
// Discovery reads hwloc's usual environment (HWLOC_XMLFILE, HWLOC_SYNTHETIC,
// HWLOC_THISSYSTEM) like every hwloc consumer; tenferro keeps no copy of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_set.h"

namespace tenferro::cpu {

namespace internal {
class HwlocTopology;
}  // namespace internal

/// Where topology comes from. Value type.
struct TopologySource {
  enum class Kind : std::uint8_t {
    kThisSystem,  ///< the running machine; thread and memory binding act on it
    kXmlFile,     ///< an hwloc XML file (`text` is the path)
    kXmlBuffer,   ///< hwloc XML in memory (`text`)
    kSynthetic,   ///< an hwloc synthetic description, e.g. "pack:2 numa:1 core:4 pu:1"
  };
  Kind kind = Kind::kThisSystem;
  std::string text;
  /// Restricts the allowed CPUs further, like a process CPU binding. For an
  /// injected topology this is the simulated binding (nullopt: every allowed
  /// CPU); for this system it narrows the real binding (tests, partitioning).
  std::optional<CpuSet> process_cpus;

  static TopologySource this_system() { return {}; }
  static TopologySource xml_file(std::string path) { return {Kind::kXmlFile, std::move(path), std::nullopt}; }
  static TopologySource xml_buffer(std::string xml) { return {Kind::kXmlBuffer, std::move(xml), std::nullopt}; }
  static TopologySource synthetic(std::string description) {
    return {Kind::kSynthetic, std::move(description), std::nullopt};
  }
  TopologySource&& restricted_to(CpuSet cpus) && {
    process_cpus = std::move(cpus);
    return std::move(*this);
  }
  /// e.g. "this system" or "synthetic 'pack:2 numa:1 core:2 pu:1'".
  std::string describe() const;
};

/// One OS NUMA node.
struct NumaNode {
  /// The OS node number (may be sparse: nodes 0 and 2 without 1).
  unsigned os_index = 0;
  /// Allowed CPUs whose nearest node this is (each CPU belongs to at most one
  /// node, Note [Node-local CPUs] in topology.cpp); empty for a memory-only
  /// node (CXL, HBM) or a node none of whose CPUs the process may use.
  CpuSet cpus;
  /// The node's memory in bytes (0 when unknown).
  std::uint64_t memory_bytes = 0;
  /// Whether the process may allocate memory on the node.
  bool memory_allowed = true;
};

/// A discovered topology restricted to the process's allowed CPUs. Immutable
/// after discovery; copies share the hwloc handle. Thread-safe.
class CpuTopology {
 public:
  /// Loads and restricts the topology. kInvalidArgument (stage
  /// kConfiguration) for an unreadable or malformed description, or when no
  /// allowed CPU remains.
  static Result<CpuTopology> discover(const TopologySource& source = TopologySource::this_system());

  /// Every CPU the description contains, allowed or not.
  const CpuSet& machine_cpus() const noexcept { return machine_cpus_; }
  /// The CPUs this process may run on (Note [Allowed CPUs]); never empty.
  const CpuSet& allowed_cpus() const noexcept { return allowed_cpus_; }
  /// NUMA nodes ordered by os_index, memory-only and fully disallowed ones
  /// included.
  std::span<const NumaNode> numa_nodes() const noexcept { return nodes_; }
  /// The node with OS number `os_index`, or nullptr.
  const NumaNode* find_node(unsigned os_index) const noexcept;
  /// Allowed CPUs that are local to no NUMA node.
  CpuSet cpus_outside_nodes() const;
  /// The allowed CPUs grouped by physical core, in CPU order (SMT siblings
  /// share a group).
  std::span<const CpuSet> cores() const noexcept { return cores_; }
  /// True when binding threads and memory acts on the running machine.
  /// Binding calls on an injected topology would silently do nothing, so
  /// executors and allocators skip them.
  bool is_this_system() const noexcept { return this_system_; }
  const std::string& source_description() const noexcept { return source_; }

  /// The hwloc handle, for binding and NUMA allocation (internal).
  const std::shared_ptr<const internal::HwlocTopology>& hwloc() const noexcept { return hwloc_; }

 private:
  CpuTopology() = default;
  CpuSet machine_cpus_;
  CpuSet allowed_cpus_;
  std::vector<NumaNode> nodes_;
  std::vector<CpuSet> cores_;
  bool this_system_ = false;
  std::string source_;
  std::shared_ptr<const internal::HwlocTopology> hwloc_;
};

}  // namespace tenferro::cpu
