#include "tenferro/cpu/domains/topology.h"
#include "cpu/domains/domain_test_support.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tenferro::cpu {
namespace {

CpuSet sched_affinity() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  CpuSet set;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) set.add(cpu);
  }
  return set;
}

TEST(TopologyTest, ThisSystemIsRestrictedToTheProcessAffinity) {
  const CpuTopology topo = testing::load_topology(TopologySource::this_system());
  EXPECT_TRUE(topo.is_this_system());
  EXPECT_FALSE(topo.allowed_cpus().empty());
  // Every CPU this thread may run on is allowed, and nothing outside the machine.
  EXPECT_TRUE(sched_affinity().is_subset_of(topo.allowed_cpus()));
  EXPECT_TRUE(topo.allowed_cpus().is_subset_of(topo.machine_cpus()));
  ASSERT_FALSE(topo.numa_nodes().empty());
  CpuSet covered;
  for (const NumaNode& node : topo.numa_nodes()) covered = covered | node.cpus;
  EXPECT_EQ(covered | topo.cpus_outside_nodes(), topo.allowed_cpus());
  int in_cores = 0;
  for (const CpuSet& core : topo.cores()) in_cores += core.count();
  EXPECT_EQ(in_cores, topo.allowed_cpus().count());
}

TEST(TopologyTest, ThisSystemNarrowedToOneCpu) {
  const CpuTopology full = testing::load_topology(TopologySource::this_system());
  const int last = full.allowed_cpus().last();
  const CpuTopology one = testing::load_topology(TopologySource::this_system().restricted_to(CpuSet{last}));
  EXPECT_EQ(one.allowed_cpus(), CpuSet{last});
  EXPECT_EQ(one.machine_cpus(), full.machine_cpus());
  EXPECT_EQ(one.cores().size(), 1u);
}

TEST(TopologyTest, SyntheticTwoAndFourNodeLayouts) {
  const CpuTopology two = testing::load_topology(TopologySource::synthetic("pack:2 numa:1 core:2 pu:1"));
  EXPECT_FALSE(two.is_this_system());
  ASSERT_EQ(two.numa_nodes().size(), 2u);
  EXPECT_EQ(two.numa_nodes()[0].cpus, CpuSet::range(0, 1));
  EXPECT_EQ(two.numa_nodes()[1].cpus, CpuSet::range(2, 3));
  EXPECT_EQ(two.allowed_cpus(), CpuSet::range(0, 3));

  const CpuTopology four =
      testing::load_topology(TopologySource::synthetic("pack:4 [numa(memory=1073741824)] core:2 pu:2"));
  ASSERT_EQ(four.numa_nodes().size(), 4u);
  EXPECT_EQ(four.allowed_cpus().count(), 16);
  EXPECT_EQ(four.cores().size(), 8u);
  EXPECT_EQ(four.cores()[0].count(), 2);  // SMT siblings stay together
  EXPECT_EQ(four.numa_nodes()[3].os_index, 3u);
  EXPECT_EQ(four.numa_nodes()[3].memory_bytes, 1ull << 30);
}

TEST(TopologyTest, SimulatedProcessBindingRestrictsNodes) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::synthetic("pack:2 numa:1 core:4 pu:1").restricted_to(CpuSet{2, 3, 4}));
  EXPECT_EQ(topo.machine_cpus().count(), 8);
  EXPECT_EQ(topo.allowed_cpus(), (CpuSet{2, 3, 4}));
  EXPECT_EQ(topo.numa_nodes()[0].cpus, (CpuSet{2, 3}));
  EXPECT_EQ(topo.numa_nodes()[1].cpus, (CpuSet{4}));
}

TEST(TopologyTest, FixtureSparseNodeIds) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("sparse_node_ids.xml")));
  ASSERT_EQ(topo.numa_nodes().size(), 2u);
  EXPECT_EQ(topo.numa_nodes()[0].os_index, 0u);
  EXPECT_EQ(topo.numa_nodes()[1].os_index, 2u);
  EXPECT_EQ(topo.numa_nodes()[1].cpus, CpuSet::range(8, 11));
  EXPECT_EQ(topo.find_node(1), nullptr);
  ASSERT_NE(topo.find_node(2), nullptr);
  EXPECT_EQ(topo.allowed_cpus().to_string(), "0-3,8-11");
}

TEST(TopologyTest, FixtureMemoryOnlyNodeHasAnEmptyCpulist) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("memory_only_node.xml")));
  ASSERT_EQ(topo.numa_nodes().size(), 3u);
  const NumaNode* hbm = topo.find_node(3);
  ASSERT_NE(hbm, nullptr);
  EXPECT_TRUE(hbm->cpus.empty());
  EXPECT_EQ(hbm->memory_bytes, 16ull << 30);
  EXPECT_TRUE(topo.cpus_outside_nodes().empty());
}

TEST(TopologyTest, FixtureCpusOutsideEveryNode) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("cpus_outside_nodes.xml")));
  ASSERT_EQ(topo.numa_nodes().size(), 1u);
  EXPECT_EQ(topo.numa_nodes()[0].cpus, CpuSet::range(0, 3));
  EXPECT_EQ(topo.cpus_outside_nodes(), CpuSet::range(4, 7));
}

TEST(TopologyTest, FixtureRestrictedMaskUsesAllowedCpusOnly) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("restricted_four_node_smt.xml")));
  EXPECT_EQ(topo.machine_cpus().count(), 32);
  EXPECT_EQ(topo.allowed_cpus().to_string(), "2-3,6-7,18-19,22-23");
  ASSERT_EQ(topo.numa_nodes().size(), 4u);
  EXPECT_EQ(topo.numa_nodes()[0].cpus.to_string(), "2-3,18-19");
  EXPECT_EQ(topo.numa_nodes()[1].cpus.to_string(), "6-7,22-23");
  EXPECT_TRUE(topo.numa_nodes()[2].cpus.empty());
  EXPECT_FALSE(topo.numa_nodes()[2].memory_allowed);
  EXPECT_TRUE(topo.numa_nodes()[0].memory_allowed);
  ASSERT_EQ(topo.cores().size(), 4u);
  EXPECT_EQ(topo.cores()[0], (CpuSet{2, 18}));
  // A further (simulated) process binding narrows the cgroup set.
  const CpuTopology narrowed =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("restricted_four_node_smt.xml"))
                                 .restricted_to(CpuSet::range(0, 7)));
  EXPECT_EQ(narrowed.allowed_cpus().to_string(), "2-3,6-7");
}

TEST(TopologyTest, XmlBufferRoundTrip) {
  std::ifstream in(testing::topology_fixture("sparse_node_ids.xml"));
  std::stringstream text;
  text << in.rdbuf();
  const CpuTopology topo = testing::load_topology(TopologySource::xml_buffer(text.str()));
  EXPECT_EQ(topo.allowed_cpus().count(), 8);
}

TEST(TopologyTest, BadSourcesAreTypedConfigurationErrors) {
  const TopologySource bad[] = {
      TopologySource::xml_file("/nonexistent/topology.xml"),
      TopologySource::xml_buffer("<topology>not hwloc</topology>"),
      TopologySource::synthetic("pack:two"),
      TopologySource::synthetic("pack:2 numa:1 core:2 pu:1").restricted_to(CpuSet{64}),
  };
  for (const TopologySource& source : bad) {
    auto topo = CpuTopology::discover(source);
    ASSERT_FALSE(topo.ok()) << source.describe();
    EXPECT_EQ(topo.status().code(), ErrorCode::kInvalidArgument) << source.describe();
    EXPECT_EQ(topo.status().stage(), ErrorStage::kConfiguration);
  }
  auto empty = CpuTopology::discover(TopologySource::synthetic("pack:1 core:2 pu:1").restricted_to(CpuSet{7}));
  EXPECT_NE(empty.status().message().find("expected at least one allowed CPU"), std::string_view::npos);
}

}  // namespace
}  // namespace tenferro::cpu
