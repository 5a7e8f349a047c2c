// Configuration: registration rules, validation, transactional
// reconfiguration and epochs, independence of runtimes, cache reports.
#include <gtest/gtest.h>

#include "runtime/runtime_test_support.h"

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures

constexpr StorageDomainId kDevice{7};

class CountingCache final : public CacheOwner {
 public:
  CacheUsage usage() const noexcept override { return {3, 300, 10, 2, 1}; }
  void clear() noexcept override {}
};

TEST(ConfigTest, EngineRegistrationRules) {
  MockEngine a{1, kHostStorageDomain, "a"};
  RuntimeConfigBuilder c;
  EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kInvalidArgument);  // no engines
  EngineRegistration reg = a.registration();
  ASSERT_TRUE(c.add_engine(reg).ok());
  EXPECT_TRUE(c.add_engine(reg).ok());          // identical: a no-op
  EngineRegistration other = a.registration();  // new slot objects
  Status dup = c.add_engine(other);
  EXPECT_EQ(dup.code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(dup.stage(), ErrorStage::kConfiguration);
  EXPECT_TRUE(c.replace_engine(other).ok());
  EngineRegistration zero = a.registration();
  zero.metadata.id = EngineId();
  EXPECT_EQ(c.add_engine(zero).code(), ErrorCode::kInvalidArgument);
  auto built = c.build(RuntimeId(5), 1);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ((*built)->engines().size(), 1u);
  EXPECT_NE((*built)->engines()[0].event_domain, EventDomainId());
  EXPECT_NE((*built)->describe().find("'a'"), std::string::npos);
}

TEST(ConfigTest, ValidationOfWholeConfigurations) {
  MockEngine host{1, kHostStorageDomain, "host"};
  MockEngine device{2, kDevice, "device"};
  {
    RuntimeConfigBuilder c;
    EngineRegistration reg = host.registration();
    reg.event_driver = nullptr;  // executor without driver
    ASSERT_TRUE(c.add_engine(reg).ok());
    EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kInvalidArgument);
  }
  {
    RuntimeConfigBuilder c;
    EngineRegistration reg = device.registration();
    reg.allocator = nullptr;  // non-host storage needs an allocator
    ASSERT_TRUE(c.add_engine(reg).ok());
    EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kInvalidArgument);
  }
  {
    RuntimeConfigBuilder c;
    ASSERT_TRUE(c.add_engine(host.registration()).ok());
    ASSERT_TRUE(c.add_engine(device.registration()).ok());
    auto t = std::make_shared<MockTransfer>();
    // The device endpoint names the wrong storage class.
    {
      RuntimeConfigBuilder wrong = c;
      ASSERT_TRUE(wrong.add_transfer({{EngineId(1), kHostStorageDomain}, {EngineId(2), kHostStorageDomain}, t}).ok());
      EXPECT_EQ(wrong.build(RuntimeId(1), 1).status().code(), ErrorCode::kInvalidArgument);
    }
    ASSERT_TRUE(c.add_transfer({{EngineId(1), kHostStorageDomain}, {EngineId(2), kDevice}, t}).ok());
    EXPECT_TRUE(c.replace_transfer({{EngineId(1), kHostStorageDomain}, {EngineId(2), kDevice}, t}).ok());
    {
      auto ok = c.build(RuntimeId(1), 1);
      EXPECT_TRUE(ok.ok()) << ok.status().to_string();
    }
    EXPECT_EQ(
        c.add_transfer({{EngineId(1), kHostStorageDomain}, {EngineId(2), kDevice}, std::make_shared<MockTransfer>()})
            .code(),
        ErrorCode::kAlreadyExists);
    c.policies().fallback_engine = EngineId(9);
    EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kNotFound);
    c.policies().fallback_engine = EngineId();
    c.policies().preferences.push_back(FamilyPreference{OpFamily::kDotGeneral, "", {EngineId(8)}});
    EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kNotFound);
    c.policies().preferences.clear();
    c.policies().capacities = {{{ResourceKind::kCpuThreads, 0}, 2}, {{ResourceKind::kCpuThreads, 0}, 4}};
    EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kInvalidArgument);
    // An exclusivity token has capacity 1.
    c.policies().capacities = {{{ResourceKind::kExclusive, 3}, 2}};
    Result<std::shared_ptr<const RuntimeConfig>> shared_token = c.build(RuntimeId(1), 1);
    EXPECT_EQ(shared_token.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(
        shared_token.status().message().find("expected capacity 1 for the exclusivity token exclusive(3), found 2"),
        std::string::npos)
        << shared_token.status().to_string();
    c.policies().capacities = {{{ResourceKind::kExclusive, 3}, 1}};
    EXPECT_TRUE(c.build(RuntimeId(1), 1).ok());
    c.policies().capacities.clear();
    // Removing an engine removes what names it.
    ASSERT_TRUE(c.remove_engine(EngineId(2)).ok());
    auto built = c.build(RuntimeId(1), 1);
    ASSERT_TRUE(built.ok());
    EXPECT_TRUE((*built)->transfers().empty());
  }
}

// A provider that recovers a context type the engine's executor does not
// provide is rejected when the configuration is built.
class ForeignContextProvider final : public ElementwiseRuntime {
 public:
  struct OtherContext {};
  std::string_view name() const noexcept override { return "foreign"; }
  ExecutionContextTypeId context_type() const noexcept override { return ExecutionContextTypeId::of<OtherContext>(); }
  Result<PrepareCapability> prepare(const OperationSignature&) const override { return PrepareCapability::prepared(); }
  Status run(const OperationRequest&, ErasedExecutionContext) const override { return ok_status(); }
};

TEST(ConfigTest, ProviderContextTypeMustMatchTheExecutor) {
  MockEngine host{1, kHostStorageDomain, "host"};
  EngineRegistration reg = host.registration();
  reg.capabilities.elementwise = std::make_shared<ForeignContextProvider>();
  RuntimeConfigBuilder c;
  ASSERT_TRUE(c.add_engine(reg).ok());
  auto built = c.build(RuntimeId(1), 1);
  EXPECT_EQ(built.status().code(), ErrorCode::kContractViolation);
  EXPECT_EQ(built.status().stage(), ErrorStage::kConfiguration);
  EXPECT_NE(built.status().message().find("foreign"), std::string::npos);
}

TEST(ConfigTest, ExtensionModulesAreAtomicAndDuplicatesExplicit) {
  MockEngine host{1, kHostStorageDomain, "host"};
  auto e1 = std::make_shared<SquarePlusEngine>();
  auto e2 = std::make_shared<SquarePlusEngine>();
  RuntimeConfigBuilder c;
  ASSERT_TRUE(c.add_engine(host.registration()).ok());
  ASSERT_TRUE(c.add_extension({"test.square_plus", EngineId(1), e1}).ok());
  EXPECT_TRUE(c.add_extension({"test.square_plus", EngineId(1), e1}).ok());  // same: no-op
  EXPECT_EQ(c.add_extension({"test.square_plus", EngineId(1), e2}).code(), ErrorCode::kAlreadyExists);
  // A module whose second registration conflicts installs nothing.
  ExtensionModule module{"m", {{"test.other", EngineId(1), e2}, {"test.square_plus", EngineId(1), e2}}};
  EXPECT_EQ(c.add_extension_module(module).code(), ErrorCode::kAlreadyExists);
  auto built = c.build(RuntimeId(1), 1);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ((*built)->extensions().size(), 1u);
  EXPECT_EQ((*built)->find_extension("test.other", EngineId(1)), nullptr);
  ASSERT_TRUE(c.replace_extension({"test.square_plus", EngineId(1), e2}).ok());
  auto rebuilt = c.build(RuntimeId(1), 1);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ((*rebuilt)->find_extension("test.square_plus", EngineId(1))->implementation, e2);
  // An extension for an unregistered engine fails validation.
  ASSERT_TRUE(c.add_extension({"test.x", EngineId(4), e1}).ok());
  EXPECT_EQ(c.build(RuntimeId(1), 1).status().code(), ErrorCode::kNotFound);
}

TEST(ConfigTest, ReconfigurationIsTransactional) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  b.add_engine(host.registration());
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(rt->epoch(), 1u);
  std::shared_ptr<const RuntimeConfig> before = rt->config();
  // A failing edit and an edit producing an invalid configuration both
  // leave the old snapshot and epoch.
  Status failed = rt->reconfigure(
      [](RuntimeConfigBuilder&) { return Error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "changed my mind"); });
  EXPECT_EQ(failed.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.stage(), ErrorStage::kConfiguration);
  Status invalid = rt->reconfigure([](RuntimeConfigBuilder& c) {
    c.policies().default_engine = EngineId(42);
    return ok_status();
  });
  EXPECT_EQ(invalid.code(), ErrorCode::kNotFound);
  EXPECT_EQ(rt->epoch(), 1u);
  EXPECT_EQ(rt->config().get(), before.get());
  // A valid one advances the epoch by exactly one.
  MockEngine extra{3, kHostStorageDomain, "extra"};
  ASSERT_TRUE(rt->reconfigure([&](RuntimeConfigBuilder& c) { return c.add_engine(extra.registration()); }).ok());
  EXPECT_EQ(rt->epoch(), 2u);
  EXPECT_EQ(rt->config()->engines().size(), 2u);
  EXPECT_EQ(before->engines().size(), 1u);  // old snapshots are immutable
  // The unchanged engine keeps its event domain identity.
  EXPECT_EQ(rt->config()->find_engine(EngineId(1))->event_domain, before->find_engine(EngineId(1))->event_domain);
}

TEST(ConfigTest, RuntimesAreIndependent) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b1;
  b1.add_engine(host.registration());
  RuntimeBuilder b2;
  b2.add_engine(host.registration());
  auto r1 = b1.build();
  auto r2 = b2.build();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_NE(r1->id(), r2->id());
  ASSERT_TRUE(r1->reconfigure([](RuntimeConfigBuilder&) { return ok_status(); }).ok());
  EXPECT_EQ(r1->epoch(), 2u);
  EXPECT_EQ(r2->epoch(), 1u);
  EXPECT_NE(r1->config()->engines()[0].event_domain, r2->config()->engines()[0].event_domain);
}

TEST(ConfigTest, BuilderReportsTheFirstDeferredError) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.add_engine(host.registration()).add_engine(MockEngine{1, kHostStorageDomain, "clash"}.registration());
  EXPECT_EQ(b.build().status().code(), ErrorCode::kAlreadyExists);
}

TEST(ConfigTest, CacheReportCountsEachOwnerOnce) {
  MockEngine a{1, kHostStorageDomain, "a"};
  MockEngine c2{3, kHostStorageDomain, "b"};
  auto cache = std::make_shared<CountingCache>();
  EngineRegistration ra = a.registration();
  ra.cache_owner = cache;
  EngineRegistration rb = c2.registration();
  rb.cache_owner = cache;  // shared by two engines
  RuntimeBuilder b;
  b.add_engine(std::move(ra)).add_engine(std::move(rb));
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  RuntimeCacheReport report = rt->cache_report();
  ASSERT_EQ(report.engines.size(), 1u);
  EXPECT_EQ(report.engines[0].usage.bytes, 300u);
}

}  // namespace
}  // namespace tenferro::runtime
