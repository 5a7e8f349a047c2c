// `tenferro bench elementwise`: cpu::binary on large contiguous and strided
// operands against the memcpy-equivalent bandwidth (a memcpy measured
// alternately in the same run; bandwidth counts bytes read plus written),
// and the per-call cost of an 8-element add against a plain inline loop.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_command.h"
#include "bench/kernel_bench_util.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::bench {
namespace {

template <class T>
void fill_values(const Tensor& t, double scale) {
  T* p = static_cast<T*>(t.storage()->data());
  const std::size_t n = t.storage()->nbytes() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(1.0 + scale * static_cast<double>(i % 1000));
}

// The baseline of the small case: the same 8 additions in a plain loop.
__attribute__((noinline)) void plain_add8(const double* a, const double* b, double* c) {
  for (int i = 0; i < 8; ++i) c[i] = a[i] + b[i];
}

struct LargeCase {
  const char* name;
  cpu::BinaryOp op;
  DType dtype;
  enum Kind { kContiguous, kTransposed, kBroadcastRow } kind;
};

}  // namespace

int run_elementwise_suite(const SuiteOptions& options, Reporter& reporter) {
  const int rounds = options.runs > 0 ? options.runs : 9;
  const std::int64_t side = options.quick ? 1024 : 4096;  // large operands are side x side
  const LargeCase cases[] = {
      {"add_f64", cpu::BinaryOp::kAdd, DType::kFloat64, LargeCase::kContiguous},
      {"mul_f64", cpu::BinaryOp::kMul, DType::kFloat64, LargeCase::kContiguous},
      {"add_f32", cpu::BinaryOp::kAdd, DType::kFloat32, LargeCase::kContiguous},
      {"mul_f32", cpu::BinaryOp::kMul, DType::kFloat32, LargeCase::kContiguous},
      {"add_f64_transposed_rhs", cpu::BinaryOp::kAdd, DType::kFloat64, LargeCase::kTransposed},
      {"add_f64_broadcast_row", cpu::BinaryOp::kAdd, DType::kFloat64, LargeCase::kBroadcastRow},
  };
  for (int threads : options.threads) {
    const auto ctx = make_context(threads);
    for (const LargeCase& lc : cases) {
      const std::vector<std::int64_t> shape = {side, side};
      auto a = Tensor::empty(shape, lc.dtype);
      auto b =
          Tensor::empty(lc.kind == LargeCase::kBroadcastRow ? std::vector<std::int64_t>{1, side} : shape, lc.dtype);
      auto c = Tensor::empty(shape, lc.dtype);
      if (!a.ok() || !b.ok() || !c.ok()) {
        reporter.progress("out of memory for " + std::string(lc.name));
        return 1;
      }
      visit_dtype(lc.dtype, [&]<class T>(T) {
        if constexpr (std::is_floating_point_v<T>) {
          fill_values<T>(*a, 1e-3);
          fill_values<T>(*b, 2e-3);
          fill_values<T>(*c, 0.0);
        }
      });
      Tensor rhs = *b;
      if (lc.kind == LargeCase::kTransposed) rhs = *b->transpose(0, 1);
      if (lc.kind == LargeCase::kBroadcastRow) rhs = *b->broadcast_to(shape);
      reporter.progress(fmt::format("{} {}x{} ({} thread(s))", lc.name, side, side, threads));
      Status status;
      const std::size_t bytes = c->nbytes();
      const Interleaved t =
          time_interleaved([&] { status = cpu::binary(lc.op, a->view(), rhs.view(), c->view(), *ctx); },
                           [&] { parallel_memcpy(c->data(), a->data(), bytes, *ctx); }, rounds);
      if (!status.ok()) {
        reporter.progress(status.to_string());
        return 1;
      }
      // Traffic: a and the rhs read (a broadcast row stays in cache), c written.
      const double traffic = static_cast<double>(bytes) * (lc.kind == LargeCase::kBroadcastRow ? 2.0 : 3.0);
      Case row{fmt::format("{}_{}_t{}", lc.name, side * side, threads),
               traffic / t.ours.median() / 1e9,
               "GB/s",
               2.0 * static_cast<double>(bytes) / t.baseline.median() / 1e9,
               "memcpy",
               threads,
               static_cast<int>(t.ours.runs())};
      reporter.add(std::move(row));
    }
  }

  // Small-op cost: an 8-element float64 add through the kernel entry point
  // (validation + loop selection + loop) against the bare loop.
  Tensor a = *Tensor::from_values<double>({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  Tensor b = *Tensor::from_values<double>({8, 7, 6, 5, 4, 3, 2, 1}, {8});
  Tensor c = *Tensor::empty({8}, DType::kFloat64);
  const cpu::SequentialContext seq;
  const TensorView av = a.view(), bv = b.view(), cv = c.view();
  Status status;
  const Interleaved t =
      time_interleaved([&] { status = cpu::binary(cpu::BinaryOp::kAdd, av, bv, cv, seq); },
                       [&] {
                         plain_add8(static_cast<const double*>(av.data), static_cast<const double*>(bv.data),
                                    static_cast<double*>(cv.data));
                       },
                       std::max(rounds, 15));
  if (!status.ok()) return 1;
  reporter.add(Case{"add_f64_8_kernel_call", t.ours.median() * 1e9, "ns", t.baseline.median() * 1e9, "plain_loop", 1,
                    static_cast<int>(t.ours.runs())});
  return 0;
}

}  // namespace tenferro::bench
