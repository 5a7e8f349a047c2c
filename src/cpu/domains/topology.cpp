// Topology discovery through hwloc, restricted to the process's allowed CPUs
// (Note [Allowed CPUs] in topology.h), and the hwloc handle it keeps.
#include "tenferro/cpu/domains/topology.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "cpu/domains/hwloc_topology.h"

namespace tenferro::cpu {
namespace internal {

CpuSet cpu_set_from_bitmap(hwloc_const_bitmap_t bitmap) {
  CpuSet set;
  for (int cpu = hwloc_bitmap_first(bitmap); cpu >= 0 && cpu < CpuSet::kMaxCpus; cpu = hwloc_bitmap_next(bitmap, cpu)) {
    set.add(cpu);
  }
  return set;
}

hwloc_bitmap_t bitmap_from_cpu_set(const CpuSet& set) {
  hwloc_bitmap_t bitmap = hwloc_bitmap_alloc();
  TENFERRO_CHECK(bitmap != nullptr);
  for (int cpu = set.first(); cpu >= 0; cpu = set.next(cpu)) hwloc_bitmap_set(bitmap, static_cast<unsigned>(cpu));
  return bitmap;
}

HwlocTopology::~HwlocTopology() { hwloc_topology_destroy(topology_); }

bool HwlocTopology::supports_node_binding() const noexcept {
  if (!is_this_system()) return false;
  const hwloc_topology_support* support = hwloc_topology_get_support(topology_);
  return support != nullptr && support->membind->alloc_membind && support->membind->bind_membind;
}

void* HwlocTopology::allocate_on_node(std::size_t bytes, unsigned os_node) const noexcept {
  hwloc_bitmap_t nodeset = hwloc_bitmap_alloc();
  if (nodeset == nullptr) return nullptr;
  hwloc_bitmap_only(nodeset, os_node);
  void* block = hwloc_alloc_membind(topology_, bytes, nodeset, HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
  hwloc_bitmap_free(nodeset);
  return block;
}

void HwlocTopology::free_node_memory(void* block, std::size_t bytes) const noexcept {
  hwloc_free(topology_, block, bytes);
}

std::optional<unsigned> HwlocTopology::node_of(const void* block, std::size_t bytes) const noexcept {
  hwloc_bitmap_t nodeset = hwloc_bitmap_alloc();
  if (nodeset == nullptr) return std::nullopt;
  std::optional<unsigned> node;
  if (hwloc_get_area_memlocation(topology_, block, bytes, nodeset, HWLOC_MEMBIND_BYNODESET) == 0 &&
      hwloc_bitmap_weight(nodeset) == 1) {
    node = static_cast<unsigned>(hwloc_bitmap_first(nodeset));
  }
  hwloc_bitmap_free(nodeset);
  return node;
}

}  // namespace internal

namespace {

Status config_error(const TopologySource& source, std::string_view what) {
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "CPU topology from {}: {}",
                    source.describe(), what);
}

// hwloc_topology_t owned until handed to HwlocTopology.
struct TopologyHandle {
  hwloc_topology_t t = nullptr;
  ~TopologyHandle() {
    if (t != nullptr) hwloc_topology_destroy(t);
  }
  hwloc_topology_t release() { return std::exchange(t, nullptr); }
};

Status select_source(hwloc_topology_t t, const TopologySource& source) {
  int rc = 0;
  switch (source.kind) {
    case TopologySource::Kind::kThisSystem:
      return ok_status();
    case TopologySource::Kind::kXmlFile:
      rc = hwloc_topology_set_xml(t, source.text.c_str());
      break;
    case TopologySource::Kind::kXmlBuffer:
      if (source.text.size() >= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        return config_error(source, "the XML buffer is too large");
      }
      // hwloc wants the length including the terminating NUL.
      rc = hwloc_topology_set_xmlbuffer(t, source.text.c_str(), static_cast<int>(source.text.size()) + 1);
      break;
    case TopologySource::Kind::kSynthetic:
      rc = hwloc_topology_set_synthetic(t, source.text.c_str());
      if (rc != 0) {
        return config_error(source, "expected an hwloc synthetic description such as 'pack:2 numa:1 core:4 pu:1'");
      }
      break;
  }
  if (rc != 0) return config_error(source, fmt::format("hwloc cannot use it ({})", std::strerror(errno)));
  return ok_status();
}

// Note [Node-local CPUs]
// hwloc 2 gives a NUMA node the cpuset of the object it is attached to, so a
// CPU-less node (CXL, HBM, NVDIMM: an empty cpulist in sysfs) attached to the
// Machine "has" every CPU, and a naive domain-per-node split would overlap.
// Instead each CPU belongs to exactly one node: walking up from its PU, the
// first object with memory children decides, and among those children the
// first ordinary DRAM node (no subtype such as "MCDRAM", "HBM", "NVM"), else
// the first one. Nodes no CPU chooses are memory-only (empty cpus); CPUs
// whose ancestors carry no node at all are "outside every node".
void collect_memory_nodes(hwloc_obj_t obj, std::vector<hwloc_obj_t>& out) {
  for (hwloc_obj_t child = obj->memory_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_NUMANODE) {
      out.push_back(child);
    } else {
      collect_memory_nodes(child, out);  // a memory-side cache in front of nodes
    }
  }
}

hwloc_obj_t nearest_normal_node(hwloc_obj_t pu) {
  for (hwloc_obj_t obj = pu; obj != nullptr; obj = obj->parent) {
    if (obj->memory_arity == 0) continue;
    std::vector<hwloc_obj_t> nodes;
    collect_memory_nodes(obj, nodes);
    if (nodes.empty()) continue;
    for (hwloc_obj_t node : nodes) {
      if (node->subtype == nullptr) return node;
    }
    return nodes.front();
  }
  return nullptr;
}

}  // namespace

std::string TopologySource::describe() const {
  std::string text_part;
  switch (kind) {
    case Kind::kThisSystem:
      text_part = "this system";
      break;
    case Kind::kXmlFile:
      text_part = fmt::format("XML file '{}'", text);
      break;
    case Kind::kXmlBuffer:
      text_part = fmt::format("XML buffer ({} bytes)", text.size());
      break;
    case Kind::kSynthetic:
      text_part = fmt::format("synthetic '{}'", text);
      break;
  }
  if (process_cpus.has_value()) text_part += fmt::format(" restricted to CPUs {}", *process_cpus);
  return text_part;
}

Result<CpuTopology> CpuTopology::discover(const TopologySource& source) {
  TopologyHandle handle;
  if (hwloc_topology_init(&handle.t) != 0) return config_error(source, "hwloc_topology_init failed");
  TENFERRO_TRY(select_source(handle.t, source));
  // Keep disallowed CPUs and nodes so machine_cpus() and memory_allowed can
  // report them; the allowed sets are applied below.
  hwloc_topology_set_flags(handle.t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(handle.t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_cache_types_filter(handle.t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(handle.t, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(handle.t) != 0) {
    return config_error(source, fmt::format("hwloc could not load it ({})", std::strerror(errno)));
  }
  hwloc_topology_t t = handle.t;

  CpuTopology topo;
  topo.source_ = source.describe();
  topo.this_system_ = hwloc_topology_is_thissystem(t) != 0;
  topo.machine_cpus_ = internal::cpu_set_from_bitmap(hwloc_topology_get_topology_cpuset(t));
  CpuSet allowed = internal::cpu_set_from_bitmap(hwloc_topology_get_allowed_cpuset(t));
  if (topo.this_system_) {
    hwloc_bitmap_t binding = hwloc_bitmap_alloc();
    if (binding != nullptr && hwloc_get_cpubind(t, binding, HWLOC_CPUBIND_PROCESS) == 0) {
      allowed = allowed & internal::cpu_set_from_bitmap(binding);
    }
    hwloc_bitmap_free(binding);
  }
  if (source.process_cpus.has_value()) allowed = allowed & *source.process_cpus;
  if (allowed.empty()) {
    return config_error(source, fmt::format("expected at least one allowed CPU; machine CPUs {}, process binding {}",
                                            topo.machine_cpus_,
                                            source.process_cpus ? source.process_cpus->to_string() : "unrestricted"));
  }
  topo.allowed_cpus_ = allowed;

  hwloc_const_nodeset_t allowed_nodes = hwloc_topology_get_allowed_nodeset(t);
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); node != nullptr;
       node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node)) {
    NumaNode info;
    info.os_index = node->os_index;
    info.memory_bytes = node->attr != nullptr ? node->attr->numanode.local_memory : 0;
    info.memory_allowed = hwloc_bitmap_isset(allowed_nodes, node->os_index) != 0;
    topo.nodes_.push_back(std::move(info));
  }
  std::sort(topo.nodes_.begin(), topo.nodes_.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });
  for (int cpu = allowed.first(); cpu >= 0; cpu = allowed.next(cpu)) {
    const hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, static_cast<unsigned>(cpu));
    const hwloc_obj_t node = pu != nullptr ? nearest_normal_node(pu) : nullptr;
    if (node == nullptr) continue;
    for (NumaNode& info : topo.nodes_) {
      if (info.os_index == node->os_index) info.cpus.add(cpu);
    }
  }

  CpuSet in_cores;
  for (hwloc_obj_t core = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, nullptr); core != nullptr;
       core = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, core)) {
    CpuSet cpus = internal::cpu_set_from_bitmap(core->cpuset) & allowed;
    if (cpus.empty()) continue;
    in_cores = in_cores | cpus;
    topo.cores_.push_back(std::move(cpus));
  }
  // PUs that hwloc placed in no core (some virtual machines) count as cores.
  const CpuSet loose = allowed.minus(in_cores);
  for (int cpu = loose.first(); cpu >= 0; cpu = loose.next(cpu)) topo.cores_.push_back(CpuSet{cpu});
  std::sort(topo.cores_.begin(), topo.cores_.end(),
            [](const CpuSet& a, const CpuSet& b) { return a.first() < b.first(); });

  topo.hwloc_ = std::make_shared<const internal::HwlocTopology>(handle.release());
  return topo;
}

const NumaNode* CpuTopology::find_node(unsigned os_index) const noexcept {
  for (const NumaNode& node : nodes_) {
    if (node.os_index == os_index) return &node;
  }
  return nullptr;
}

CpuSet CpuTopology::cpus_outside_nodes() const {
  CpuSet covered;
  for (const NumaNode& node : nodes_) covered = covered | node.cpus;
  return allowed_cpus_.minus(covered);
}

}  // namespace tenferro::cpu
