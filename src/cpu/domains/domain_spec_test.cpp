#include "tenferro/cpu/domains/domain_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "cpu/domains/domain_test_support.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::cpu {
namespace {

void expect_error(const Status& status, ErrorCode code, std::string_view fragment) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_EQ(status.stage(), ErrorStage::kConfiguration);
  EXPECT_NE(status.message().find(fragment), std::string_view::npos) << status.to_string();
}

TEST(DomainSpecTest, DefaultsFollowNodesWithSparseIds) {
  const auto specs = default_domain_specs(
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("sparse_node_ids.xml"))));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].id, CpuDomainId(1));
  EXPECT_EQ(specs[0].numa_node, 0u);
  EXPECT_EQ(specs[1].id, CpuDomainId(2));
  EXPECT_EQ(specs[1].numa_node, 2u);  // the OS node id, not the domain's position
  EXPECT_EQ(specs[1].cpus, CpuSet::range(8, 11));
  EXPECT_EQ(specs[1].thread_budget, 4);
}

TEST(DomainSpecTest, MemoryOnlyNodeGetsNoDomain) {
  const auto specs = default_domain_specs(
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("memory_only_node.xml"))));
  ASSERT_EQ(specs.size(), 2u);
  for (const CpuDomainSpec& spec : specs) {
    EXPECT_FALSE(spec.cpus.empty());
    EXPECT_NE(spec.numa_node, 3u);
  }
  EXPECT_TRUE(validate_static_specs(specs).ok());
}

TEST(DomainSpecTest, CpusOutsideNodesGetTheirOwnNodelessDomain) {
  const auto specs = default_domain_specs(
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("cpus_outside_nodes.xml"))));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].cpus, CpuSet::range(0, 3));
  EXPECT_EQ(specs[1].cpus, CpuSet::range(4, 7));
  EXPECT_FALSE(specs[1].numa_node.has_value());
}

TEST(DomainSpecTest, RestrictedMaskBuildsDomainsFromAllowedCpusOnly) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("restricted_four_node_smt.xml")));
  const auto specs = default_domain_specs(topo);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].cpus.to_string(), "2-3,18-19");
  EXPECT_EQ(specs[1].cpus.to_string(), "6-7,22-23");
  const auto whole = default_domain_specs(topo, CpuDomainLayout::kWholeAllowedSet);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].cpus, topo.allowed_cpus());
  EXPECT_FALSE(whole[0].numa_node.has_value());  // spans two nodes
  EXPECT_EQ(whole[0].thread_budget, 8);
}

TEST(DomainSpecTest, StaticChecks) {
  expect_error(validate_static_specs({}), ErrorCode::kInvalidArgument, "expected at least one domain");
  const CpuDomainSpec zero_id[] = {{CpuDomainId(), CpuSet{0}}};
  expect_error(validate_static_specs(zero_id), ErrorCode::kInvalidArgument, "non-zero CpuDomainId");
  const CpuDomainSpec empty[] = {{CpuDomainId(1), CpuSet{}}};
  expect_error(validate_static_specs(empty), ErrorCode::kInvalidArgument, "expected a non-empty CPU set");
  const CpuDomainSpec duplicate[] = {{CpuDomainId(1), CpuSet{0}}, {CpuDomainId(1), CpuSet{1}}};
  expect_error(validate_static_specs(duplicate), ErrorCode::kAlreadyExists, "found id 1 twice");
  const CpuDomainSpec overlap[] = {{CpuDomainId(1), CpuSet::range(0, 3)}, {CpuDomainId(2), CpuSet::range(2, 5)}};
  expect_error(validate_static_specs(overlap), ErrorCode::kInvalidArgument, "found CPUs 2-3 in both");
  const CpuDomainSpec budget[] = {{CpuDomainId(1), CpuSet{0, 1}, 3}};
  expect_error(validate_static_specs(budget), ErrorCode::kInvalidArgument, "thread budget in [1, 2]");
  const CpuDomainSpec negative[] = {{CpuDomainId(1), CpuSet{0, 1}, -1}};
  expect_error(validate_static_specs(negative), ErrorCode::kInvalidArgument, "found -1");
  CpuDomainSpec spin{CpuDomainId(1), CpuSet{0, 1}};
  spin.worker_spin = std::chrono::microseconds(-1);
  expect_error(validate_static_specs({&spin, 1}), ErrorCode::kInvalidArgument,
               "expected a worker spin in [0, 1000000] us, found -1 us");
  spin.worker_spin = CpuDomainSpec::kMaxWorkerSpin + std::chrono::microseconds(1);
  expect_error(validate_static_specs({&spin, 1}), ErrorCode::kInvalidArgument, "found 1000001 us");
  spin.worker_spin = CpuDomainSpec::kMaxWorkerSpin;
  EXPECT_TRUE(validate_static_specs({&spin, 1}).ok());
}

TEST(DomainSpecTest, ResolveChecksAgainstTheAllowedCpus) {
  const CpuTopology topo =
      testing::load_topology(TopologySource::xml_file(testing::topology_fixture("restricted_four_node_smt.xml")));
  const CpuDomainSpec outside[] = {{CpuDomainId(1), CpuSet{2, 3, 4}}};
  expect_error(resolve_specs(topo, outside).status(), ErrorCode::kPlacementError, "found CPUs 4 outside them");
  const CpuDomainSpec bad_node[] = {{CpuDomainId(1), CpuSet{2, 3}, 0, 2u}};  // node 2 is not allowed
  expect_error(resolve_specs(topo, bad_node).status(), ErrorCode::kInvalidArgument, "found node 2");

  const CpuDomainSpec ok[] = {{CpuDomainId(7), CpuSet{2, 18}}, {CpuDomainId(9), CpuSet{3, 6}}};
  auto resolved = resolve_specs(topo, ok);
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ((*resolved)[0].numa_node, 0u);             // inferred: both CPUs on node 0
  EXPECT_EQ((*resolved)[0].thread_budget, 2);          // filled in
  EXPECT_FALSE((*resolved)[1].numa_node.has_value());  // spans nodes 0 and 1
}

TEST(DomainSpecTest, ManagedSetOnAnInjectedTopologyDoesNotPin) {
  const CpuTopology topo = testing::load_topology(TopologySource::synthetic("pack:4 numa:1 core:2 pu:1"));
  auto set = CpuDomainSet::create_managed(topo);
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  ASSERT_EQ((*set)->domains().size(), 4u);
  const CpuResourceDomain& d3 = *(*set)->find(CpuDomainId(3));
  EXPECT_EQ(d3.cpus(), CpuSet::range(4, 5));
  EXPECT_EQ(d3.numa_node(), 2u);
  EXPECT_EQ(d3.executor_capabilities().affinity, CpuAffinityGuarantee::kNone);
  EXPECT_EQ(d3.memory()->policy(), NumaMemoryPolicy::kFirstTouch);
  // Work still runs (on this machine's threads, unpinned).
  int calls = 0;
  ASSERT_TRUE(d3.run(ParallelMode::kInner, [&](const CpuExecutionContext& ctx) {
                  ++calls;
                  EXPECT_EQ(ctx.domain_id(), CpuDomainId(3));
                  return ok_status();
                }).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(d3.metrics().worker_pins + d3.metrics().entering_thread_pins, 0u);
}

TEST(DomainSpecTest, FailedManagedConstructionBuildsNothing) {
  const CpuTopology topo = testing::load_topology(TopologySource::synthetic("pack:2 numa:1 core:2 pu:1"));
  const CpuDomainSpec specs[] = {{CpuDomainId(1), CpuSet{0, 1}}, {CpuDomainId(2), CpuSet{1, 2}}};
  auto set = CpuDomainSet::create_managed(topo, specs);
  EXPECT_EQ(set.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::cpu
