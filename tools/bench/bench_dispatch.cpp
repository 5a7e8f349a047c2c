// `tenferro bench dispatch`: the runtime's fixed costs against same-run
// baselines.
//
// Note [Dispatch benchmark engines]
// eager_add_8_cpu and eager_matmul_2x2_cpu run on the real CPU engine
// (cpu::make_cpu_engine) against its slot called directly;
// eager_matmul_2x2_cpu_tiny compares that eager matmul with the same call on
// an engine whose dot_general composite plans every call. The other eager
// cases run on a small test engine defined here whose providers do the real arithmetic on
// TensorViews (contiguous float64 add; row-major 2x2 matmul). The baseline
// of an eager case is the same provider called directly with a hand-built
// request and an output from the same host allocator: the difference is
// what the eager layer adds (epoch check, validation, slot, executor entry).
// The prepared cases use a no-op provider so only runtime overhead remains.
// Baselines and ours are measured in interleaved rounds; medians reported.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/bench_command.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime.h"
#include "testing/counting_new.h"

namespace tenferro::bench {
namespace {

using program::CoreSemanticOp;
using namespace tenferro::runtime;  // NOLINT(google-build-using-namespace): benchmark scope

PrepareCapability kernel() {
  PreparedKernel k;
  k.reproducible = true;
  return PrepareCapability::prepared(std::move(k));
}

// Real arithmetic on contiguous float64 views (the eager cases).
class BenchElementwise final : public ElementwiseRuntime {
 public:
  std::string_view name() const noexcept override { return "bench.elementwise"; }
  Result<PrepareCapability> prepare(const OperationSignature& sig) const override {
    if (sig.op != CoreSemanticOp::kAdd && sig.op != CoreSemanticOp::kNeg)
      return PrepareCapability::unsupported("add and neg only");
    return kernel();
  }
  Status run(const OperationRequest& r, ErasedExecutionContext) const override {
    auto* y = static_cast<double*>(r.output.data);
    const std::int64_t n = r.output.numel();
    const auto* a = static_cast<const double*>(r.inputs[0].data);
    if (r.op == CoreSemanticOp::kNeg) {
      for (std::int64_t i = 0; i < n; ++i) y[i] = -a[i];
      return ok_status();
    }
    const auto* b = static_cast<const double*>(r.inputs[1].data);
    for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
    return ok_status();
  }
};

// Row-major [m, k] x [k, n] (the eager matmul case).
class BenchDotGeneral final : public DotGeneralRuntime {
 public:
  std::string_view name() const noexcept override { return "bench.dot_general"; }
  Result<PrepareCapability> prepare(const OperationSignature&) const override { return kernel(); }
  Status run(const OperationRequest& r, ErasedExecutionContext) const override {
    const TensorView& a = r.inputs[0];
    const TensorView& b = r.inputs[1];
    const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    const auto* x = static_cast<const double*>(a.data);
    const auto* w = static_cast<const double*>(b.data);
    auto* y = static_cast<double*>(r.output.data);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t q = 0; q < k; ++q)
          s += x[i * a.strides[0] + q * a.strides[1]] * w[q * b.strides[0] + j * b.strides[1]];
        y[i * n + j] = s;
      }
    return ok_status();
  }
};

// Does nothing (the prepared-path overhead cases).
class NoOpElementwise final : public ElementwiseRuntime {
 public:
  std::string_view name() const noexcept override { return "bench.noop"; }
  Result<PrepareCapability> prepare(const OperationSignature&) const override { return kernel(); }
  Status run(const OperationRequest&, ErasedExecutionContext) const override { return ok_status(); }
};

Result<Runtime> make_runtime(std::shared_ptr<ElementwiseRuntime> elementwise) {
  RuntimeBuilder b;
  EngineRegistration reg;
  reg.metadata.id = EngineId(1);
  reg.metadata.name = "bench";
  reg.capabilities.elementwise = std::move(elementwise);
  reg.capabilities.dot_general = std::make_shared<BenchDotGeneral>();
  reg.executor = std::make_shared<InlineEngineExecutor>();
  reg.event_driver = make_cpu_immediate_event_driver(reg.executor);
  b.add_engine(std::move(reg));
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  return b.build();
}

std::shared_ptr<const program::SemanticProgram> neg_chain(int length) {
  program::ProgramBuilder b;
  program::ProgramValue v = *b.add_input(DType::kFloat64, {8});
  for (int i = 0; i < length; ++i) v = *b.emit(CoreSemanticOp::kNeg, {v});
  return b.freeze({v})->program;
}

// Medians of interleaved rounds: each round times `batch` calls of ours,
// then of the baseline. Returns {ours, baseline} in seconds per call.
struct CallPair {
  double ours = 0;
  double baseline = 0;
  int runs = 0;
};
CallPair interleaved_medians(const std::function<void()>& ours, const std::function<void()>& baseline, int batch,
                             int rounds) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < batch; ++i) {
    ours();
    baseline();
  }
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) ours();
    auto t1 = Clock::now();
    for (int i = 0; i < batch; ++i) baseline();
    auto t2 = Clock::now();
    a.push_back(std::chrono::duration<double>(t1 - t0).count() / batch);
    b.push_back(std::chrono::duration<double>(t2 - t1).count() / batch);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(a), median(b), rounds};
}

Case make_case(std::string name, const CallPair& p, std::string baseline_name) {
  Case c{std::move(name), p.ours * 1e9, "ns", p.baseline * 1e9, std::move(baseline_name), 1, p.runs};
  c.extra["overhead_ns"] = (p.ours - p.baseline) * 1e9;
  return c;
}

int run_dispatch(const SuiteOptions& options, Reporter& reporter) {
  const int rounds = options.runs > 0 ? options.runs : (options.quick ? 7 : 31);
  const int batch = options.quick ? 200 : 2000;
  auto elementwise = std::make_shared<BenchElementwise>();
  Result<Runtime> rt = make_runtime(elementwise);
  if (!rt.ok()) {
    reporter.progress(rt.status().to_string());
    return 1;
  }
  EagerContext ctx = rt->on();
  const Tensor a = *Tensor::from_values<double>({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  const Tensor m = *Tensor::from_values<double>({1, 2, 3, 4}, {2, 2});
  volatile double sink = 0;
  NoExecutionContext no_context;

  // --- eager_add_8 ---
  {
    const program::CoreAttributes attrs = program::NoAttributes{};
    const Dims strides = row_major_strides(a.shape());
    const ElementwiseRuntime* volatile add_slot = elementwise.get();
    auto ours = [&] { sink = sink + static_cast<double*>(ctx.add(a, a)->data())[0]; };
    auto base = [&] {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(64), DType::kFloat64, a.shape(), strides);
      const TensorView views[2] = {a.view(), a.view()};
      OperationRequest r{CoreSemanticOp::kAdd, &attrs, views, out.view(), nullptr, {}};
      (void)add_slot->run(r, ErasedExecutionContext::of(no_context));
      sink = sink + static_cast<double*>(out.data())[0];
    };
    reporter.add(make_case("eager_add_8", interleaved_medians(ours, base, batch, rounds), "direct_provider_call"));
  }
  // --- eager_matmul_2x2 ---
  {
    BenchDotGeneral dot_impl;
    const DotGeneralRuntime* volatile dot = &dot_impl;
    const program::CoreAttributes attrs = program::DotGeneralAttributes{{}, {}, {1}, {0}};
    const Dims strides = row_major_strides(m.shape());
    auto ours = [&] { sink = sink + static_cast<double*>(ctx.matmul(m, m)->data())[0]; };
    auto base = [&] {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(32), DType::kFloat64, m.shape(), strides);
      const TensorView views[2] = {m.view(), m.view()};
      OperationRequest r{CoreSemanticOp::kDotGeneral, &attrs, views, out.view(), nullptr, {}};
      (void)dot->run(r, ErasedExecutionContext::of(no_context));
      sink = sink + static_cast<double*>(out.data())[0];
    };
    reporter.add(make_case("eager_matmul_2x2", interleaved_medians(ours, base, batch, rounds), "direct_provider_call"));
  }
  // --- eager_add_8_cpu / eager_matmul_2x2_cpu: the same calls through the
  // real CPU engine (target: <= 0.3 us per call), against its slot called
  // directly with a CpuEngineContext and an output from the host allocator.
  {
    Result<cpu::CpuEngine> engine = cpu::make_cpu_engine();
    if (!engine.ok()) {
      reporter.progress(engine.status().to_string());
      return 1;
    }
    RuntimeBuilder builder;
    builder.add_engine(engine->registration);
    Result<Runtime> cpu_rt = builder.build();
    if (!cpu_rt.ok()) return 1;
    EagerContext cpu_ctx = cpu_rt->on();
    cpu::SequentialContext sequential;
    cpu::CpuEngineContext cpu_context;
    cpu_context.parallel = &sequential;
    const program::CoreAttributes none = program::NoAttributes{};
    const ElementwiseRuntime* volatile add_slot = engine->registration.capabilities.elementwise.get();
    const Dims vector_strides = row_major_strides(a.shape());
    auto add_ours = [&] { sink = sink + static_cast<double*>(cpu_ctx.add(a, a)->data())[0]; };
    auto add_base = [&] {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(64), DType::kFloat64, a.shape(), vector_strides);
      const TensorView views[2] = {a.view(), a.view()};
      OperationRequest r{CoreSemanticOp::kAdd, &none, views, out.view(), nullptr, {}};
      (void)add_slot->run(r, ErasedExecutionContext::of(cpu_context));
      sink = sink + static_cast<double*>(out.data())[0];
    };
    reporter.add(
        make_case("eager_add_8_cpu", interleaved_medians(add_ours, add_base, batch, rounds), "direct_provider_call"));
    const program::CoreAttributes matmul = program::DotGeneralAttributes{{}, {}, {1}, {0}};
    const DotGeneralRuntime* volatile dot_slot = engine->registration.capabilities.dot_general.get();
    const Dims matrix_strides = row_major_strides(m.shape());
    auto mm_ours = [&] { sink = sink + static_cast<double*>(cpu_ctx.matmul(m, m)->data())[0]; };
    auto mm_base = [&] {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(32), DType::kFloat64, m.shape(), matrix_strides);
      const TensorView views[2] = {m.view(), m.view()};
      OperationRequest r{CoreSemanticOp::kDotGeneral, &matmul, views, out.view(), nullptr, {}};
      (void)dot_slot->run(r, ErasedExecutionContext::of(cpu_context));
      sink = sink + static_cast<double*>(out.data())[0];
    };
    reporter.add(make_case("eager_matmul_2x2_cpu", interleaved_medians(mm_ours, mm_base, batch, rounds),
                           "direct_provider_call"));
    // The same eager matmul against an engine whose dot_general composite
    // plans every call (tiny shortcut off: Note [Tiny dot_general]).
    cpu::CpuEngineOptions planned_options;
    planned_options.dot_general.tiny_max_work = -1;
    Result<cpu::CpuEngine> planned = cpu::make_cpu_engine(planned_options);
    if (!planned.ok()) return 1;
    RuntimeBuilder planned_builder;
    planned_builder.add_engine(planned->registration);
    Result<Runtime> planned_rt = planned_builder.build();
    if (!planned_rt.ok()) return 1;
    EagerContext planned_ctx = planned_rt->on();
    auto mm_planned = [&] { sink = sink + static_cast<double*>(planned_ctx.matmul(m, m)->data())[0]; };
    reporter.add(make_case("eager_matmul_2x2_cpu_tiny", interleaved_medians(mm_ours, mm_planned, batch, rounds),
                           "eager_matmul_2x2_cpu_planned"));
  }
  // --- eager_allocs_per_call ---
  {
    constexpr int kCalls = 10000;
    const std::uint64_t before = testing::allocation_count();
    for (int i = 0; i < kCalls; ++i) sink = sink + static_cast<double*>(ctx.add(a, a)->data())[0];
    const std::uint64_t eager = testing::allocation_count() - before;
    const std::uint64_t before_base = testing::allocation_count();
    for (int i = 0; i < kCalls; ++i) {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(64), DType::kFloat64, a.shape(), a.strides());
      sink = sink + static_cast<double*>(out.data())[0];
    }
    const std::uint64_t base = testing::allocation_count() - before_base;
    Case c{"eager_allocs_per_call",
           double(eager) / kCalls,
           "allocs",
           double(base) / kCalls,
           "output_allocation_only",
           1,
           kCalls};
    c.extra["note"] = "heap allocations per eager add call; the baseline allocates only the output";
    reporter.add(std::move(c));
  }
  // --- prepared_node_overhead / prepared_run_overhead (no-op provider) ---
  {
    auto noop = std::make_shared<NoOpElementwise>();
    Result<Runtime> nrt = make_runtime(noop);
    if (!nrt.ok()) return 1;
    constexpr int kLong = 64;
    const InputSignature sig = InputSignature::of(std::span<const Tensor>(&a, 1));
    auto short_plan = *nrt->prepare_for(neg_chain(1), sig);
    auto long_plan = *nrt->prepare_for(neg_chain(kLong), sig);
    const program::CoreAttributes attrs = program::NoAttributes{};
    const TensorView in[1] = {a.view()};
    const TensorView out_view = a.view();
    // Called through an opaque base pointer, as the runtime does (no
    // devirtualisation of the baseline).
    const ElementwiseRuntime* volatile slot = noop.get();
    auto direct = [&] {
      OperationRequest r{CoreSemanticOp::kNeg, &attrs, in, out_view, nullptr, {}};
      (void)slot->run(r, ErasedExecutionContext::of(no_context));
    };
    auto run_short = [&] {
      sink = sink + double((*nrt->run_prepared(*short_plan, std::span<const Tensor>(&a, 1))).size());
    };
    auto run_long = [&] {
      sink = sink + double((*nrt->run_prepared(*long_plan, std::span<const Tensor>(&a, 1))).size());
    };
    const CallPair short_vs_long = interleaved_medians(run_long, run_short, batch / 8 + 1, rounds);
    auto direct_batch = [&] {
      for (int i = 0; i < kLong - 1; ++i) direct();
    };
    const CallPair direct_pair = interleaved_medians(direct_batch, direct_batch, batch / 8 + 1, rounds);
    CallPair node;
    node.ours = (short_vs_long.ours - short_vs_long.baseline) / (kLong - 1);
    node.baseline = direct_pair.ours / (kLong - 1);
    node.runs = rounds;
    Case nc = make_case("prepared_node_overhead", node, "direct_provider_call");
    nc.extra["note"] = "(run of 64 no-op nodes - run of 1) / 63, vs one direct no-op provider call";
    reporter.add(std::move(nc));
    // One-node run vs a direct provider call plus the output allocation.
    auto base_run = [&] {
      Tensor out = *Tensor::from_storage(*Storage::allocate_host(64), DType::kFloat64, a.shape(), a.strides());
      OperationRequest r{CoreSemanticOp::kNeg, &attrs, in, out.view(), nullptr, {}};
      (void)slot->run(r, ErasedExecutionContext::of(no_context));
      sink = sink + static_cast<double*>(out.data())[0];
    };
    reporter.add(make_case("prepared_run_overhead", interleaved_medians(run_short, base_run, batch, rounds),
                           "direct_provider_call_with_output_allocation"));
  }
  // --- plan_cache_hit ---
  {
    auto program = neg_chain(4);
    const InputSignature sig = InputSignature::of(std::span<const Tensor>(&a, 1));
    (void)rt->prepare_for(program, sig);
    std::mutex mutex;
    std::unordered_map<std::uint64_t, std::shared_ptr<const program::SemanticProgram>> map;
    map[program->fingerprint().prefix64()] = program;
    auto ours = [&] { sink = sink + double((*rt->prepare_for(program, sig))->num_nodes()); };
    auto base = [&] {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = map.find(program->fingerprint().prefix64() ^ static_cast<std::uint64_t>(sink > 1e300));
      std::shared_ptr<const program::SemanticProgram> copy = it->second;
      sink = sink + double(copy->num_operations());
    };
    Case c = make_case("plan_cache_hit", interleaved_medians(ours, base, batch, rounds), "mutex_unordered_map_find");
    c.extra["note"] = "Runtime::prepare_for hit (key build, hash, lookup, shared_ptr copy) for a prebuilt signature";
    reporter.add(std::move(c));
  }
  return 0;
}

}  // namespace

int run_dispatch_suite(const SuiteOptions& options, Reporter& reporter) { return run_dispatch(options, reporter); }

}  // namespace tenferro::bench
