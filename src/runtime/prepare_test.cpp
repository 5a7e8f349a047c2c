// prepare_for: resolution order, specialization widening, determinism,
// validation before provider work, transfers, buffer planning, plan cache.
#include <gtest/gtest.h>

#include "runtime/runtime_test_support.h"
#include "tenferro/runtime/spi/null_engine.h"

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures
using program::ProgramBuilder;
using program::ProgramValue;
using Values = SmallVector<ProgramValue, 4>;

constexpr StorageDomainId kDevice{7};

struct Fixture {
  MockEngine host{1, kHostStorageDomain, "host"};
  MockEngine device{2, kDevice, "device"};
  std::shared_ptr<MockTransfer> to_device = std::make_shared<MockTransfer>();
  std::shared_ptr<MockTransfer> to_host = std::make_shared<MockTransfer>();

  Result<Runtime> build(bool with_device = false, bool with_transfers = true,
                        const std::function<void(RuntimeConfigBuilder&)>& edit = nullptr) {
    RuntimeBuilder b;
    b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
    b.add_engine(host.registration());
    if (with_device) {
      b.add_engine(device.registration());
      if (with_transfers) {
        b.add_transfer({{host.id, kHostStorageDomain}, {device.id, kDevice}, to_device});
        b.add_transfer({{device.id, kDevice}, {host.id, kHostStorageDomain}, to_host});
      }
    }
    if (edit) edit(b.config());
    return b.build();
  }
};

std::shared_ptr<const program::SemanticProgram> add_program(std::int64_t n = 4) {
  return make_program({{n}, {n}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kAdd, {x[0], x[1]}));
    return Values{y};
  });
}

InputSignature host_signature(std::initializer_list<std::initializer_list<std::int64_t>> shapes) {
  InputSignature sig;
  for (auto shape : shapes) sig.add(InputDescriptor{DType::kFloat64, Dims(shape)});
  return sig;
}

TEST(PrepareTest, PreparesAndRunsASimpleProgram) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto program = add_program();
  auto prepared = rt->prepare_for(program, host_signature({{4}, {4}}));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ASSERT_EQ((*prepared)->num_nodes(), 1u);
  EXPECT_EQ((*prepared)->node(0).kind, ScheduledNodeKind::kOperation);
  EXPECT_EQ((*prepared)->node(0).provider, "host.provider");
  EXPECT_EQ((*prepared)->runtime_id(), rt->id());
  EXPECT_EQ((*prepared)->epoch(), rt->epoch());
  const Tensor a = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  const Tensor b = make_tensor(*f.host.allocator, {10, 20, 30, 40}, {4});
  const Tensor inputs[] = {a, b};
  auto out = rt->run_prepared(**prepared, inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{11, 22, 33, 44}));
  const std::string explain = (*prepared)->explain();
  EXPECT_NE(explain.find("add"), std::string::npos);
  EXPECT_NE(explain.find("host.provider"), std::string::npos);
  EXPECT_NE(explain.find("peak memory estimate"), std::string::npos);
}

std::shared_ptr<const program::SemanticProgram> neg_chain(int length, std::int64_t n = 4) {
  return make_program({{n}}, [length](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    ProgramValue v = x[0];
    for (int i = 0; i < length; ++i) {
      TENFERRO_ASSIGN_OR_RETURN(v, b.emit(CoreSemanticOp::kNeg, {v}));
    }
    return Values{v};
  });
}

std::shared_ptr<const program::SemanticProgram> extension_program(std::shared_ptr<const program::ExtensionOp> op) {
  return make_program({{4}}, [op](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(auto r, b.emit_extension(op, {x[0]}));
    return Values{r[0]};
  });
}

TEST(PrepareTest, InputsAndGuardsAreValidatedBeforeProviderWork) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto program = make_program({{program::SymbolicExtent::unknown()}, {program::SymbolicExtent::unknown()}},
                              [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
                                TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kAdd, {x[0], x[1]}));
                                return Values{y};
                              });
  ASSERT_NE(program, nullptr);
  // (the add requires equal extents: a guard, or symbols unified by the builder)
  auto mismatch = rt->prepare_for(program, host_signature({{3}, {4}}));
  // A guard failure, or (should the program's guards miss the requirement)
  // the runtime's concrete re-validation (Note [Concrete validation]).
  EXPECT_TRUE(mismatch.status().code() == ErrorCode::kShapeGuardFailed ||
              mismatch.status().code() == ErrorCode::kShapeMismatch)
      << mismatch.status().to_string();
  EXPECT_EQ(mismatch.status().stage(), ErrorStage::kPrepare);
  auto count = rt->prepare_for(program, host_signature({{3}}));
  EXPECT_EQ(count.status().code(), ErrorCode::kInvalidArgument);
  InputSignature wrong_dtype;
  wrong_dtype.add(InputDescriptor{DType::kFloat32, Dims{3}}).add(InputDescriptor{DType::kFloat64, Dims{3}});
  EXPECT_EQ(rt->prepare_for(program, wrong_dtype).status().code(), ErrorCode::kDTypeMismatch);
  InputSignature foreign = host_signature({{3}, {3}});
  InputSignature foreign2;
  foreign2.add(InputDescriptor{DType::kFloat64, Dims{3}, LayoutClass::kRowMajor, StorageDomainId(99)});
  foreign2.add(InputDescriptor{DType::kFloat64, Dims{3}});
  EXPECT_EQ(rt->prepare_for(program, foreign2).status().code(), ErrorCode::kInvalidArgument);
  // An undefined tensor in the signature is named as such (it read as a
  // shape mismatch against []).
  const Tensor defined = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  const Tensor with_undefined[] = {defined, Tensor()};
  const Status undefined = rt->prepare_for(program, InputSignature::of(with_undefined)).status();
  EXPECT_EQ(undefined.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(undefined.to_string().find("input 1: expected a defined tensor"), std::string::npos)
      << undefined.to_string();
  EXPECT_EQ(f.host.behaviour->prepares.load(), 0);  // no provider was asked
  EXPECT_TRUE(rt->prepare_for(program, foreign).ok());
  EXPECT_EQ(f.host.behaviour->prepares.load(), 1);
}

// Note [Resolution order] steps 1-4 with two host engines.
struct TwoHostEngines {
  MockEngine a{1, kHostStorageDomain, "a"};
  MockEngine b{3, kHostStorageDomain, "b"};
  Result<Runtime> build(MockSlots a_slots, const std::function<void(RuntimeConfigBuilder&)>& edit = nullptr) {
    RuntimeBuilder builder;
    builder.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
    builder.add_engine(a.registration(a_slots)).add_engine(b.registration());
    if (edit) edit(builder.config());
    return builder.build();
  }
};

TEST(PrepareTest, EngineWithoutTheSlotIsSkippedWithAReason) {
  TwoHostEngines e;
  auto rt = e.build(MockSlots{false, true, true, true});
  ASSERT_TRUE(rt.ok());
  auto prepared = rt->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ((*prepared)->node(0).engine, EngineId(3));
  EXPECT_NE((*prepared)->explain().find("engine 1 ('a'): no elementwise slot"), std::string::npos);
}

TEST(PrepareTest, UnsupportedMovesOnButErrorsStopResolution) {
  TwoHostEngines e;
  auto rt = e.build(MockSlots{});
  ASSERT_TRUE(rt.ok());
  e.a.behaviour->unsupported.insert(CoreSemanticOp::kAdd);
  auto prepared = rt->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ((*prepared)->node(0).engine, EngineId(3));
  EXPECT_NE((*prepared)->explain().find("unsupported (disabled in this test)"), std::string::npos);

  e.a.behaviour->unsupported.clear();
  e.a.behaviour->prepare_error = Error(ErrorCode::kInternal, ErrorStage::kPrepare, "planner broke");
  const int b_before = e.b.behaviour->prepares.load();
  auto failed = rt->prepare_for(add_program(8), host_signature({{8}, {8}}));
  EXPECT_EQ(failed.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(failed.status().stage(), ErrorStage::kPrepare);
  EXPECT_EQ(e.b.behaviour->prepares.load(), b_before);  // never tried after an error
}

TEST(PrepareTest, OverridePlacementAndPreferenceChooseTheEngine) {
  {
    TwoHostEngines e;
    auto rt = e.build(MockSlots{});
    ASSERT_TRUE(rt.ok());
    PrepareOptions options;
    options.overrides.push_back(OperationOverride{program::OperationId(0), EngineId(3)});
    auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}), options);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->node(0).engine, EngineId(3));
    EXPECT_NE((*p)->explain().find("operation-local override"), std::string::npos);
    options.overrides[0].engine = EngineId(77);
    EXPECT_EQ(rt->prepare_for(add_program(), host_signature({{4}, {4}}), options).status().code(),
              ErrorCode::kPlacementError);
  }
  {
    TwoHostEngines e;
    auto rt = e.build(MockSlots{});
    ASSERT_TRUE(rt.ok());
    PrepareOptions options;
    options.placement = Placement::engine(EngineId(3));
    auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}), options);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->node(0).engine, EngineId(3));
  }
  {
    TwoHostEngines e;
    auto rt = e.build(MockSlots{}, [](RuntimeConfigBuilder& c) {
      c.policies().preferences.push_back(FamilyPreference{OpFamily::kElementwise, "", {EngineId(3), EngineId(1)}});
    });
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->node(0).engine, EngineId(3));
    EXPECT_NE((*p)->explain().find("runtime elementwise preference"), std::string::npos);
  }
}

// The null engine skeleton registers and builds like any engine, and each
// of its slots answers Unsupported with its own name, so a runtime holding
// only it fails at prepare with a typed error naming the refusal, and one
// holding it next to a working engine resolves to the working one.
TEST(PrepareTest, NullEngineAnswersUnsupportedForEveryFamily) {
  RuntimeBuilder alone;
  alone.add_engine(null_engine_registration(EngineId(5), "skeleton"));
  auto rt = alone.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto failed = rt->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(failed.status().stage(), ErrorStage::kPrepare);
  EXPECT_NE(failed.status().message().find("skeleton.elementwise: not implemented"), std::string::npos)
      << failed.status().message();

  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder both;
  both.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  both.add_engine(null_engine_registration(EngineId(5), "skeleton")).add_engine(host.registration());
  auto rt2 = both.build();
  ASSERT_TRUE(rt2.ok()) << rt2.status().to_string();
  auto p = rt2->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->node(0).engine, EngineId(1));

  // Called directly (never through the runtime), the providers say why.
  const EngineRegistration r = null_engine_registration(EngineId(6));
  EXPECT_EQ(r.capabilities.dot_general->run(OperationRequest{}, ErasedExecutionContext{}).code(),
            ErrorCode::kFailedPrecondition);
  auto cap = r.capabilities.reduction->prepare(OperationSignature{});
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->kind(), PrepareCapability::Kind::kUnsupported);
}

TEST(PrepareTest, FallbackEngineIsTriedLastAndOnlyWhenConfigured) {
  Fixture f;
  f.host.behaviour->unsupported.insert(CoreSemanticOp::kAdd);
  auto without = f.build(true);
  ASSERT_TRUE(without.ok());
  auto failed = without->prepare_for(add_program(), host_signature({{4}, {4}}));
  EXPECT_EQ(failed.status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(failed.status().stage(), ErrorStage::kPrepare);
  EXPECT_NE(failed.status().message().find("disabled in this test"), std::string::npos);

  Fixture g;
  g.host.behaviour->unsupported.insert(CoreSemanticOp::kAdd);
  auto with = g.build(true, true, [](RuntimeConfigBuilder& c) { c.policies().fallback_engine = EngineId(2); });
  ASSERT_TRUE(with.ok());
  auto p = with->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // Two explicit transfers to the fallback engine, then the add there.
  ASSERT_EQ((*p)->num_nodes(), 3u);
  EXPECT_EQ((*p)->node(0).kind, ScheduledNodeKind::kTransfer);
  EXPECT_EQ((*p)->node(1).kind, ScheduledNodeKind::kTransfer);
  EXPECT_EQ((*p)->node(2).engine, EngineId(2));
  EXPECT_NE((*p)->explain().find("explicitly configured fallback engine"), std::string::npos);
}

TEST(PrepareTest, SpecializationMustWidenStrictly) {
  Fixture f;
  f.host.behaviour->specialization_script = {
      {program::SpecializationAxis::kConcreteDims},
      {program::SpecializationAxis::kConcreteDims, program::SpecializationAxis::kLayoutClass}};
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  ASSERT_TRUE(rt->prepare_for(add_program(), host_signature({{4}, {4}})).ok());
  EXPECT_EQ(f.host.behaviour->prepares.load(), 3);  // none, +dims, +layout

  Fixture g;
  g.host.behaviour->repeat_specialization = true;
  auto rt2 = g.build();
  ASSERT_TRUE(rt2.ok());
  auto bad = rt2->prepare_for(add_program(), host_signature({{4}, {4}}));
  EXPECT_EQ(bad.status().code(), ErrorCode::kProviderContractError);
}

TEST(PrepareTest, ReproducibleRejectsUndeclaredAlgorithms) {
  Fixture f;
  f.host.behaviour->reproducible = false;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  EXPECT_TRUE(rt->prepare_for(add_program(), host_signature({{4}, {4}})).ok());  // Fast: fine
  PrepareOptions options;
  options.determinism = Determinism::kReproducible;
  auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}), options);
  EXPECT_EQ(p.status().code(), ErrorCode::kDeterminismUnsupported);
  f.host.behaviour->reproducible = true;
  EXPECT_TRUE(rt->prepare_for(add_program(6), host_signature({{6}, {6}}), options).ok());
}

TEST(PrepareTest, ExtensionsResolveNativeThenLoweringThenFallback) {
  auto native = std::make_shared<SquarePlusEngine>();
  auto op = std::make_shared<SquarePlusExtension>(/*lowerable=*/true, /*needs_dims=*/true);
  {
    Fixture f;
    auto rt = f.build(false, true, [&](RuntimeConfigBuilder& c) {
      ASSERT_TRUE(c.add_extension_module({"mock", {{"test.square_plus", EngineId(1), native}}}).ok());
    });
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(extension_program(op), host_signature({{4}}));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ((*p)->num_nodes(), 1u);
    EXPECT_EQ((*p)->node(0).kind, ScheduledNodeKind::kExtension);
    EXPECT_EQ((*p)->node(0).provider, "mock.square_plus");
    EXPECT_EQ(native->prepares.load(), 2);  // NeedsSpecialization, then Prepared
    const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
    auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{2, 6, 12, 20}));
    EXPECT_EQ(native->runs.load(), 1);
  }
  {
    Fixture f;
    native->unsupported = true;
    auto rt = f.build(false, true, [&](RuntimeConfigBuilder& c) {
      ASSERT_TRUE(c.add_extension({"test.square_plus", EngineId(1), native}).ok());
    });
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(extension_program(op), host_signature({{4}}));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ((*p)->num_nodes(), 2u);  // mul, add
    EXPECT_EQ((*p)->node(0).name, "mul");
    EXPECT_EQ((*p)->node(1).name, "add");
    EXPECT_NE((*p)->explain().find("lowered from 'test.square_plus' (2 core ops"), std::string::npos);
    const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
    auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{2, 6, 12, 20}));
    native->unsupported = false;
  }
  {
    Fixture f;
    auto unlowerable = std::make_shared<SquarePlusExtension>(false);
    auto rt = f.build(true);
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(extension_program(unlowerable), host_signature({{4}}));
    EXPECT_EQ(p.status().code(), ErrorCode::kUnsupportedExtension);
    EXPECT_NE(p.status().message().find("not lowerable in this test"), std::string::npos);
    // No engine registered the family: the message says how to install one.
    EXPECT_NE(p.status().message().find("install its extension module"), std::string::npos) << p.status().message();

    Fixture g;
    auto rt2 = g.build(true, true, [&](RuntimeConfigBuilder& c) {
      c.policies().fallback_engine = EngineId(2);
      ASSERT_TRUE(c.add_extension({"test.square_plus", EngineId(2), native}).ok());
    });
    ASSERT_TRUE(rt2.ok());
    auto q = rt2->prepare_for(extension_program(unlowerable), host_signature({{4}}));
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ((*q)->node((*q)->num_nodes() - 1).engine, EngineId(2));
  }
}

TEST(PrepareTest, TransfersAreInsertedOrderedAndExecuted) {
  Fixture f;
  auto rt = f.build(true);
  ASSERT_TRUE(rt.ok());
  // y = neg(x) on the host, z = exp(y) on the device, w = neg(z) on the host.
  auto program = make_program({{3}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kNeg, {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue z, b.emit(CoreSemanticOp::kExp, {y}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue w, b.emit(CoreSemanticOp::kNeg, {z}));
    return Values{w};
  });
  PrepareOptions options;
  options.overrides.push_back(OperationOverride{program::OperationId(1), EngineId(2)});
  // Without an override the last op would follow its operand to the device.
  options.overrides.push_back(OperationOverride{program::OperationId(2), EngineId(1)});
  auto p = rt->prepare_for(program, host_signature({{3}}), options);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const PreparedProgram& plan = **p;
  ASSERT_EQ(plan.num_nodes(), 5u);
  const ScheduledNodeKind kinds[] = {ScheduledNodeKind::kOperation, ScheduledNodeKind::kTransfer,
                                     ScheduledNodeKind::kOperation, ScheduledNodeKind::kTransfer,
                                     ScheduledNodeKind::kOperation};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(plan.node(i).kind, kinds[i]) << i;
  EXPECT_EQ(plan.node(1).source_engine, EngineId(1));
  EXPECT_EQ(plan.node(1).engine, EngineId(2));
  EXPECT_EQ(plan.node(3).source_engine, EngineId(2));
  EXPECT_EQ(plan.node(3).engine, EngineId(1));
  // Each transfer waits for its source producer; each op for its transfer.
  EXPECT_EQ(std::vector<std::uint32_t>(plan.node(1).dependencies.begin(), plan.node(1).dependencies.end()),
            std::vector<std::uint32_t>{0});
  EXPECT_EQ(std::vector<std::uint32_t>(plan.node(2).dependencies.begin(), plan.node(2).dependencies.end()),
            std::vector<std::uint32_t>{1});
  EXPECT_EQ(std::vector<std::uint32_t>(plan.node(4).dependencies.begin(), plan.node(4).dependencies.end()),
            std::vector<std::uint32_t>{3});
  const Tensor x = make_tensor(*f.host.allocator, {0, 1, 2}, {3});
  auto out = rt->run_prepared(plan, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const std::vector<double> w = values_of((*out)[0]);
  ASSERT_EQ(w.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(w[i], -std::exp(-double(i)));
  EXPECT_EQ((*out)[0].storage()->storage_domain(), kHostStorageDomain);
  EXPECT_EQ(f.to_device->calls.load(), 1);
  EXPECT_EQ(f.to_host->calls.load(), 1);
  EXPECT_EQ(rt->execution_metrics().transfers, 2u);
}

TEST(PrepareTest, MissingTransferProviderIsATypedPrepareError) {
  Fixture f;
  auto rt = f.build(true, /*with_transfers=*/false);
  ASSERT_TRUE(rt.ok());
  PrepareOptions options;
  options.placement = Placement::engine(EngineId(2));
  auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}), options);
  EXPECT_EQ(p.status().code(), ErrorCode::kMissingTransfer);
  EXPECT_EQ(p.status().stage(), ErrorStage::kPrepare);
  EXPECT_NE(p.status().message().find("never copies implicitly"), std::string::npos);
}

TEST(PrepareTest, BufferPlanReusesDeadBuffersAndWorksInPlace) {
  {
    Fixture f;  // no in-place: a chain of 5 ops alternates two workspace buffers
    auto rt = f.build();
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(neg_chain(5), host_signature({{4}}));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->num_buffers(), 3u);  // 2 reused workspace buffers + the output
    EXPECT_EQ((*p)->peak_memory_bytes(), 3u * 4 * sizeof(double));
  }
  {
    Fixture f;
    f.host.behaviour->in_place_ok = true;
    auto rt = f.build();
    ASSERT_TRUE(rt.ok());
    auto p = rt->prepare_for(neg_chain(5), host_signature({{4}}));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->num_buffers(), 2u);  // one in-place workspace buffer + the output
    EXPECT_NE((*p)->explain().find("in place"), std::string::npos);
    const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
    auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-1, -2, -3, -4}));
  }
}

TEST(PrepareTest, NoInPlaceOverOperandZeroWhileAnotherOperandViewsIt) {
  // y + transpose(y) with y dying at the add: writing over y would change
  // the transposed operand under the kernel (Note [Buffer planning]).
  auto program = make_program({{2, 2}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kNeg, {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue yt,
                              b.emit(CoreSemanticOp::kTranspose, {y}, program::TransposeAttributes{Dims{1, 0}}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue sum, b.emit(CoreSemanticOp::kAdd, {y, yt}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue out, b.emit(CoreSemanticOp::kNeg, {sum}));
    return Values{out};
  });
  ASSERT_NE(program, nullptr);
  Fixture f;
  f.host.behaviour->in_place_ok = true;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto p = rt->prepare_for(program, host_signature({{2, 2}}));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {2, 2});
  auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{2, 5, 5, 8})) << (*p)->explain();
}

TEST(PrepareTest, ScratchIsAOneNodeBufferReusedAcrossNodes) {
  Fixture f;
  f.host.behaviour->scratch_bytes = 256;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto p = rt->prepare_for(neg_chain(3), host_signature({{4}}));
  ASSERT_TRUE(p.ok());
  // Two alternating chain buffers, the output, one scratch buffer shared by
  // the three nodes (each node's scratch dies with the node).
  EXPECT_EQ((*p)->num_buffers(), 4u);
  const std::string explain = (*p)->explain();
  EXPECT_NE(explain.find("scratch of #0, scratch of #1, scratch of #2"), std::string::npos) << explain;
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  ASSERT_TRUE(rt->run_prepared(**p, std::span<const Tensor>(&x, 1)).ok());
  EXPECT_EQ(f.host.behaviour->runs.load(), 3);
  EXPECT_EQ(f.host.behaviour->wrong_scratch.load(), 0);
}

TEST(PrepareTest, DonatableInputBecomesTheOutputOnlyWhenExclusive) {
  Fixture f;
  f.host.behaviour->in_place_ok = true;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  const BindingMode donate[] = {BindingMode::kDonatable};
  Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  auto p = rt->prepare_for(neg_chain(1), InputSignature::of(std::span<const Tensor>(&x, 1), donate));
  ASSERT_TRUE(p.ok());
  EXPECT_NE((*p)->explain().find("donation"), std::string::npos);
  {
    Tensor shared = x;  // another holder: no donation
    auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok());
    EXPECT_NE((*out)[0].storage().get(), x.storage().get());
    EXPECT_EQ(values_of(x), (std::vector<double>{1, 2, 3, 4}));
  }
  const Storage* original = x.storage().get();
  auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].storage().get(), original);
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-1, -2, -3, -4}));
  EXPECT_EQ(rt->execution_metrics().donations, 1u);
}

TEST(PrepareTest, RunInputsAreBorrowedAndWhatOutlivesTheRunCounts) {
  // Note [Borrowed run inputs]: during a run the caller's tensor holds the
  // input storage's only count; an output that is the input holds its own;
  // a failed run forgets its inputs as a successful one does.
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  std::size_t seen = 0;
  f.host.behaviour->on_run = [&] { seen = x.storage()->use_count(); };
  auto p = rt->prepare_for(neg_chain(1), InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(p.ok());
  for (int i = 0; i < 3; ++i) {
    auto out = rt->run_prepared(**p, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(seen, 1u);
    EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-1, -2, -3, -4}));
  }
  EXPECT_EQ(x.storage()->use_count(), 1u);

  auto both = make_program({{4}}, [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue neg, b.emit(CoreSemanticOp::kNeg, {in[0]}));
    return Values{in[0], neg};
  });
  auto q = rt->prepare_for(both, InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  {
    auto out = rt->run_prepared(**q, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ((*out)[0].storage().get(), x.storage().get());
    EXPECT_EQ(x.storage()->use_count(), 2u);
  }
  EXPECT_EQ(x.storage()->use_count(), 1u);

  f.host.behaviour->fail_run_at = f.host.behaviour->runs.load();
  EXPECT_FALSE(rt->run_prepared(**p, std::span<const Tensor>(&x, 1)).ok());
  EXPECT_EQ(x.storage()->use_count(), 1u);
  EXPECT_EQ(values_of(x), (std::vector<double>{1, 2, 3, 4}));
}

TEST(PrepareTest, LimitsAndCapacitiesFailAtPrepare) {
  Fixture f;
  auto rt = f.build(false, true, [](RuntimeConfigBuilder& c) {
    c.policies().capacities.push_back({{ResourceKind::kMemoryBytes, kHostStorageDomain.value()}, 64});
  });
  ASSERT_TRUE(rt.ok());
  PrepareOptions limit;
  limit.workspace_limit_bytes = 16;
  EXPECT_EQ(rt->prepare_for(add_program(), host_signature({{4}, {4}}), limit).status().code(),
            ErrorCode::kWorkspaceLimitExceeded);
  EXPECT_TRUE(rt->prepare_for(add_program(), host_signature({{4}, {4}})).ok());  // 32 bytes
  auto big = rt->prepare_for(add_program(16), host_signature({{16}, {16}}));     // 128 bytes
  EXPECT_EQ(big.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(big.status().stage(), ErrorStage::kPrepare);
}

TEST(PrepareTest, ViewsCallNoProviderAndReshapeOfStridedInputsCopiesExplicitly) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  // y = reshape(transpose(x), [6]) + 1-d iota-free input z.
  auto program = make_program({{2, 3}, {6}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue t,
                              b.emit(CoreSemanticOp::kTranspose, {x[0]}, program::TransposeAttributes{{1, 0}}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue r, b.emit(CoreSemanticOp::kReshape, {t}, program::ReshapeAttributes{{6}}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kAdd, {r, x[1]}));
    return Values{y};
  });
  auto p = rt->prepare_for(program, host_signature({{2, 3}, {6}}));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // transpose view, copy (materialise), reshape view, add.
  ASSERT_EQ((*p)->num_nodes(), 4u);
  EXPECT_EQ((*p)->node(0).kind, ScheduledNodeKind::kView);
  EXPECT_EQ((*p)->node(1).kind, ScheduledNodeKind::kCopy);
  EXPECT_EQ((*p)->node(2).kind, ScheduledNodeKind::kView);
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor z = make_tensor(*f.host.allocator, {0, 0, 0, 0, 0, 100}, {6});
  const Tensor inputs[] = {x, z};
  auto out = rt->run_prepared(**p, inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{1, 4, 2, 5, 3, 106}));
  EXPECT_EQ(f.host.layout->copies.load(), 1);
  EXPECT_EQ(f.host.behaviour->runs.load(), 1);  // only the add reached a provider
}

TEST(PrepareTest, ReductionAndDotGeneralRunThroughPreparedGraphs) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto program =
      make_program({{2, 3}, {3, 2}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, b.emit(CoreSemanticOp::kDotGeneral, {x[0], x[1]},
                                                         program::DotGeneralAttributes{{}, {}, {1}, {0}}));
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue s,
                                  b.emit(CoreSemanticOp::kReduceSum, {c}, program::ReduceAttributes{{0}}));
        return Values{c, s};
      });
  const Tensor a = make_tensor(*f.host.allocator, {1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = make_tensor(*f.host.allocator, {1, 0, 0, 1, 1, 1}, {3, 2});
  const Tensor inputs[] = {a, b};
  auto out = rt->run(program, inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(values_of((*out)[1]), (std::vector<double>{14, 16}));
}

TEST(PrepareTest, PlanCacheHitsMissesNegativeEntriesAndEpochs) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto program = add_program();
  const Tensor a = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  const Tensor inputs[] = {a, a};
  ASSERT_TRUE(rt->run(program, inputs).ok());
  ASSERT_TRUE(rt->run(program, inputs).ok());
  // A structurally equal program built separately hits the same entry.
  ASSERT_TRUE(rt->run(add_program(), inputs).ok());
  PlanCacheStats s = rt->plan_cache_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 0u);

  // Negative caching of a deterministic failure.
  f.host.behaviour->unsupported.insert(CoreSemanticOp::kNeg);
  auto neg = neg_chain(1);
  const int before = f.host.behaviour->prepares.load();
  EXPECT_EQ(rt->run(neg, std::span<const Tensor>(&a, 1)).status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(rt->run(neg, std::span<const Tensor>(&a, 1)).status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(f.host.behaviour->prepares.load(), before + 1);
  EXPECT_EQ(rt->plan_cache_stats().negative_hits, 1u);

  // A new epoch makes old plans stale for run_prepared; run re-prepares.
  auto prepared = rt->prepare_for(program, InputSignature::of(inputs));
  ASSERT_TRUE(prepared.ok());
  const std::uint64_t epoch = rt->epoch();
  ASSERT_TRUE(rt->reconfigure([](RuntimeConfigBuilder& c) {
                  c.policies().determinism = Determinism::kFast;
                  return ok_status();
                }).ok());
  EXPECT_EQ(rt->epoch(), epoch + 1);
  EXPECT_EQ(rt->run_prepared(**prepared, inputs).status().code(), ErrorCode::kStalePreparedGraph);
  EXPECT_EQ(rt->plan_cache_stats().entries, 0u);  // old-epoch entries dropped
  ASSERT_TRUE(rt->run(program, inputs).ok());
  EXPECT_EQ(rt->plan_cache_stats().misses, 3u);
  // The unsupported op is retried in the new epoch (negative entries are per epoch).
  f.host.behaviour->unsupported.clear();
  EXPECT_TRUE(rt->run(neg, std::span<const Tensor>(&a, 1)).ok());

  // Another runtime's plan.
  Fixture g;
  auto other = g.build();
  ASSERT_TRUE(other.ok());
  auto foreign = other->prepare_for(program, InputSignature::of(inputs));
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(rt->run_prepared(**foreign, inputs).status().code(), ErrorCode::kRuntimeMismatch);
  rt->clear_plan_cache();
  EXPECT_EQ(rt->plan_cache_stats().entries, 0u);
}

TEST(PrepareTest, OutputsMayAliasInputsRepeatOrBeEmpty) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto program = make_program({{4}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kNeg, {x[0]}));
    return Values{x[0], y, y};
  });
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  auto out = rt->run(program, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].storage().get(), x.storage().get());  // the input itself
  EXPECT_EQ((*out)[1].storage().get(), (*out)[2].storage().get());
  EXPECT_EQ(values_of((*out)[1]), (std::vector<double>{-1, -2, -3, -4}));
  auto empty =
      make_program({{4}}, [](ProgramBuilder&, std::span<const ProgramValue>) -> Result<Values> { return Values{}; });
  auto none = rt->run(empty, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->size(), 0u);
}

TEST(PrepareTest, RunPreparedValidatesInputsAgainstTheSignature) {
  Fixture f;
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto p = rt->prepare_for(add_program(), host_signature({{4}, {4}}));
  ASSERT_TRUE(p.ok());
  const Tensor a = make_tensor(*f.host.allocator, {1, 2, 3, 4}, {4});
  const Tensor b = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  const Tensor bad_shape[] = {a, b};
  EXPECT_EQ(rt->run_prepared(**p, bad_shape).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(rt->run_prepared(**p, std::span<const Tensor>(&a, 1)).status().code(), ErrorCode::kInvalidArgument);
  const Tensor undefined[] = {a, Tensor()};
  EXPECT_EQ(rt->run_prepared(**p, undefined).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f.host.behaviour->runs.load(), 0);
}
}  // namespace
}  // namespace tenferro::runtime
