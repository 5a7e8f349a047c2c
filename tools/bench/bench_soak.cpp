// `tenferro bench soak`: one process, one CPU runtime (cpu::make_cpu_runtime,
// one managed domain), a long run over changing shapes: 1e6 eager calls
// (einsum "ij,jk->ik" over 1,728 shape triples, alternating with add over 64
// lengths) and then 1e4 prepare_for calls of one shape-polymorphic program
// over 10,000 distinct input lengths (every tenth plan is also run).
//
// Note [Soak report]
// The resident set (/proc/self/statm) is read once warm-up is over (the
// first 5% of each phase, and at least twice the plan cache's bound in
// prepares: enough to fill the caches to their bounds) and again
// at the end; `ours` is the final RSS and `baseline` the one after warm-up,
// so a ratio >= 0.95 says the RSS stayed within 5%. Each bounded cache is
// reported with its bound as the baseline: the runtime's prepared-plan cache
// (RuntimePolicies::plan_cache), the native einsum engine's plan cache
// (CpuEinsumOptions::cache) and the CPU domain's memory pool (its default
// MemoryPoolOptions::max_cached_bytes; make_cpu_runtime keeps the default).
// The shape sets are larger than the plan caches, so both caches evict for
// the whole run: a leak per eviction or per key would show as RSS growth.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_command.h"
#include "tenferro/cpu/domains/memory_pool.h"
#include "tenferro/cpu_runtime.h"
#include "tenferro/einsum.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime.h"

namespace tenferro::bench {
namespace {

using Clock = std::chrono::steady_clock;

double resident_mib() {
  long pages_total = 0, pages_resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0.0;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
  std::fclose(f);
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

Tensor filled(std::vector<std::int64_t> shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  std::vector<double> values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
  return *Tensor::from_values<double>(std::span<const double>(values), IntArrayRef(shape));
}

struct RssPhase {
  double start_mib = 0;
  double end_mib = 0;
  double seconds = 0;
};

void report_rss(Reporter& reporter, const std::string& name, const RssPhase& phase, std::int64_t calls) {
  Case c{name, phase.end_mib, "MiB", phase.start_mib, "rss_after_warmup", 1, 1};
  const double growth = phase.start_mib > 0 ? 100.0 * (phase.end_mib - phase.start_mib) / phase.start_mib : 0.0;
  c.extra["calls"] = calls;
  c.extra["seconds"] = phase.seconds;
  c.extra["growth_percent"] = growth;
  c.extra["flat_within_5_percent"] = growth <= 5.0;
  reporter.add(std::move(c));
}

// `ours` against its `bound` (entries or bytes, in `unit`).
void report_cache(Reporter& reporter, const std::string& name, std::size_t ours, std::size_t bound,
                  const std::string& unit, nlohmann::json extra) {
  Case c{name, static_cast<double>(ours), unit, static_cast<double>(bound), "bound", 1, 1};
  c.extra = std::move(extra);
  c.extra["within_bound"] = ours <= bound;
  reporter.add(std::move(c));
}

void report_plan_cache(Reporter& reporter, const std::string& name, std::size_t entries, std::size_t max_entries,
                       std::size_t bytes, std::size_t max_bytes, std::uint64_t evictions) {
  report_cache(reporter, name, entries, max_entries, "entries",
               {{"bytes", bytes},
                {"max_bytes", max_bytes},
                {"bytes_within_bound", bytes <= max_bytes},
                {"evictions", evictions}});
}

// Eager einsum over m, k, n in 1..12 alternating with add over lengths 1..64.
Result<RssPhase> eager_phase(runtime::Runtime& rt, std::int64_t calls, Reporter& reporter) {
  constexpr int kExtents = 12, kLengths = 64;
  std::vector<std::vector<Tensor>> matrices(kExtents + 1);
  for (int r = 1; r <= kExtents; ++r)
    for (int c = 0; c <= kExtents; ++c) matrices[r].push_back(filled({r, c == 0 ? 1 : c}));
  std::vector<Tensor> vectors;
  for (int n = 1; n <= kLengths; ++n) vectors.push_back(filled({n}));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> matmul, einsum::EinsumOp::create("ij,jk->ik"));
  runtime::EagerContext ctx = rt.on();
  RssPhase phase;
  const std::int64_t warmup = calls / 20;
  const Clock::time_point t0 = Clock::now();
  double sink = 0;
  for (std::int64_t i = 0; i < calls; ++i) {
    if (i == warmup) phase.start_mib = resident_mib();
    if (i % (calls / 10) == 0) reporter.progress("soak eager: " + std::to_string(i) + " calls");
    const std::int64_t j = i / 2;
    if (i % 2 == 0) {
      const int m = 1 + static_cast<int>(j % kExtents), k = 1 + static_cast<int>((j / kExtents) % kExtents),
                n = 1 + static_cast<int>((j / (kExtents * kExtents)) % kExtents);
      const Tensor operands[] = {matrices[m][k], matrices[k][n]};
      TENFERRO_ASSIGN_OR_RETURN(Tensor c, einsum::einsum(ctx, matmul, operands));
      sink += *static_cast<const double*>(c.data());
    } else {
      const Tensor& v = vectors[static_cast<std::size_t>(j % kLengths)];
      TENFERRO_ASSIGN_OR_RETURN(Tensor s, ctx.add(v, v));
      sink += *static_cast<const double*>(s.data());
    }
  }
  phase.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  phase.end_mib = resident_mib();
  if (sink == 1e300) reporter.progress("unreachable");  // keeps the results observable
  return phase;
}

// prepare_for of neg(x) * x over 10,000 distinct lengths (every tenth run).
Result<RssPhase> prepare_phase(runtime::Runtime& rt, std::int64_t prepares, Reporter& reporter) {
  program::ProgramBuilder builder;
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue x,
                            builder.add_input(DType::kFloat64, {program::SymbolicExtent::unknown()}));
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue y, builder.emit(program::CoreSemanticOp::kNeg, {x}));
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue z, builder.emit(program::CoreSemanticOp::kMul, {y, x}));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, builder.freeze({z}));
  RssPhase phase;
  // Past the plan cache's bound, so later prepares only replace entries.
  const std::int64_t warmup = std::max<std::int64_t>(
      prepares / 20, 2 * static_cast<std::int64_t>(rt.config()->policies().plan_cache.max_entries));
  const Clock::time_point t0 = Clock::now();
  for (std::int64_t i = 0; i < prepares; ++i) {
    if (i == warmup) phase.start_mib = resident_mib();
    if (i % (prepares / 10) == 0) reporter.progress("soak prepare: " + std::to_string(i) + " prepares");
    // Every length in 1..10,000 once per 10,000 prepares, in a scattered
    // order (7919 is prime to 10,000), so the retained plan sizes are
    // stationary after warm-up instead of growing with the length.
    const Tensor input = filled({1 + (i * 7919) % 10000});
    const runtime::InputSignature sig = runtime::InputSignature::of(std::span<const Tensor>(&input, 1));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::PreparedProgram> plan,
                              rt.prepare_for(frozen.program, sig));
    if (i % 10 == 0) {
      TENFERRO_TRY(rt.run_prepared(*plan, std::span<const Tensor>(&input, 1)).status());
    }
  }
  phase.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  phase.end_mib = resident_mib();
  return phase;
}

}  // namespace

int run_soak_suite(const SuiteOptions& options, Reporter& reporter) {
  const std::int64_t eager_calls = options.quick ? 100'000 : 1'000'000;
  const std::int64_t prepares = options.quick ? 1'000 : 10'000;
  Result<cpu::CpuRuntime> cpu = cpu::make_cpu_runtime({.threads = 1});
  if (!cpu.ok()) {
    reporter.progress(cpu.status().to_string());
    return 1;
  }
  Result<RssPhase> eager = eager_phase(cpu->runtime, eager_calls, reporter);
  Result<RssPhase> prepare = eager.ok() ? prepare_phase(cpu->runtime, prepares, reporter) : eager.status();
  if (!prepare.ok()) {
    reporter.progress(prepare.status().to_string());
    return 1;
  }
  report_rss(reporter, "soak_eager_rss", *eager, eager_calls);
  report_rss(reporter, "soak_prepare_rss", *prepare, prepares);

  const runtime::PlanCacheStats plans = cpu->runtime.plan_cache_stats();
  const runtime::PlanCacheLimits& plan_limits = cpu->runtime.config()->policies().plan_cache;
  report_plan_cache(reporter, "soak_cache_runtime_plans", plans.entries, plan_limits.max_entries, plans.bytes,
                    plan_limits.max_bytes, plans.evictions);
  const einsum::EinsumPlanCacheStats einsum_plans = cpu->einsum->metrics().cache;
  const einsum::EinsumPlanCacheLimits& einsum_limits = cpu->einsum->options().cache;
  report_plan_cache(reporter, "soak_cache_einsum_plans", einsum_plans.entries, einsum_limits.max_entries,
                    einsum_plans.bytes, einsum_limits.max_bytes, einsum_plans.evictions);
  std::size_t pool_blocks = 0, pool_bytes = 0;
  for (const std::shared_ptr<const cpu::CpuResourceDomain>& d : cpu->domains->domains()) {
    const cpu::MemoryPoolStats s = d->memory()->stats();
    pool_blocks += static_cast<std::size_t>(s.cached_blocks);
    pool_bytes += static_cast<std::size_t>(s.cached_bytes);
  }
  report_cache(reporter, "soak_cache_cpu_memory_pool", pool_bytes, cpu::MemoryPoolOptions{}.max_cached_bytes, "bytes",
               {{"cached_blocks", pool_blocks}});
  return 0;
}

}  // namespace tenferro::bench
