// Test support for the CPU domain tests: the checked-in hwloc topology
// fixtures (src/cpu/domains/testdata) and loading a topology.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "tenferro/cpu/domains/topology.h"

namespace tenferro::cpu::testing {

inline std::string topology_fixture(const char* name) {
  return std::string(TENFERRO_SOURCE_DIR) + "/src/cpu/domains/testdata/" + name;
}

/// The topology `source` describes; a failure is a test failure.
inline CpuTopology load_topology(TopologySource source) {
  auto topo = CpuTopology::discover(source);
  EXPECT_TRUE(topo.ok()) << topo.status().to_string();
  return std::move(topo).value();
}

}  // namespace tenferro::cpu::testing
