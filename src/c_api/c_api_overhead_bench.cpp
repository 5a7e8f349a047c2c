// Per-call overhead of a tiny einsum (a 2x2 float64 matmul) through the C
// API (prepared plan, and the one-shot tf_einsum) against the C++ eager call
// (einsum::einsum on an EagerContext with a reused EinsumOp), measured in
// the same process on the same engine configuration: the native GEMM on the
// calling thread. Prints the median nanoseconds per call of each.
//
// The direct executor call (the plan run into a preallocated output) is
// printed as the floor the C API's own checks add to.
//
//   build/<dir>/src/c_api/tenferro_c_api_overhead_bench [calls per batch] [batches]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <span>
#include <vector>

#include "tenferro/c/tenferro.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/runtime/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

// One measured call and the mean nanoseconds per call of each batch.
struct Case {
  const char* name;
  std::function<void()> call;
  std::vector<double> ns;
  double median() {
    std::sort(ns.begin(), ns.end());
    return ns[ns.size() / 2];
  }
};

// Batches of the cases are interleaved, so that a machine whose load
// changes during the run slows every case alike.
void measure(std::span<Case> cases, int calls, int batches) {
  for (Case& c : cases)
    for (int i = 0; i < calls; ++i) c.call();  // warm-up: plans, caches, workspace
  for (int b = 0; b < batches; ++b) {
    for (Case& c : cases) {
      const auto start = Clock::now();
      for (int i = 0; i < calls; ++i) c.call();
      c.ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / calls);
    }
  }
}

[[noreturn]] void die(const char* what, tf_error* error) {
  std::fprintf(stderr, "%s: %s\n", what, tf_error_message(error));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tenferro;
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int batches = argc > 2 ? std::atoi(argv[2]) : 15;
  if (calls < 1 || batches < 1) {
    std::fprintf(stderr, "usage: %s [calls per batch >= 1] [batches >= 1]\n", argv[0]);
    return 2;
  }
  double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {};
  const std::int64_t shape[2] = {2, 2};

  // C API.
  tf_error* error = nullptr;
  tf_runtime* rt = nullptr;
  if (tf_runtime_create(nullptr, &rt, &error) != TF_CODE_OK) die("tf_runtime_create", error);
  tf_tensor ta{sizeof(tf_tensor), a, shape, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tb{sizeof(tf_tensor), b, shape, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tc{sizeof(tf_tensor), c, shape, nullptr, 2, TF_DTYPE_F64};
  const tf_tensor* ins[2] = {&ta, &tb};
  tf_einsum_prepare_args prepare{sizeof(tf_einsum_prepare_args), rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO, 0};
  tf_einsum_plan* plan = nullptr;
  if (tf_einsum_prepare(&prepare, &plan, &error) != TF_CODE_OK) die("tf_einsum_prepare", error);
  const tf_einsum_run_args run{sizeof(tf_einsum_run_args), plan, ins, 2, &tc};
  const tf_einsum_args once{sizeof(tf_einsum_args), rt, "ij,jk->ik", ins, 2, &tc, TF_PLANNER_AUTO, 0};

  // C++ eager, the same engine configuration.
  runtime::RuntimeBuilder builder;
  Status registered = cpu::register_cpu_engine(builder);
  Result<std::shared_ptr<einsum::CpuEinsumExecutor>> executor =
      einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(
          std::shared_ptr<const cpu::CpuGemmProvider>(*cpu::NativeGemmProvider::create())));
  if (!registered.ok() || !executor.ok()) {
    std::fprintf(stderr, "C++ runtime: %s %s\n", registered.to_string().c_str(), executor.status().to_string().c_str());
    return 1;
  }
  builder.add_extension_module(einsum::cpu_extension_module(EngineId(1), *executor));
  Result<runtime::Runtime> cxx = builder.build();
  if (!cxx.ok()) {
    std::fprintf(stderr, "C++ runtime: %s\n", cxx.status().to_string().c_str());
    return 1;
  }
  runtime::EagerContext ctx = cxx->on();
  const std::shared_ptr<const einsum::EinsumOp> op = *einsum::EinsumOp::create("ij,jk->ik");
  const std::vector<Tensor> inputs = {*Tensor::from_values<double>({1, 2, 3, 4}, {2, 2}),
                                      *Tensor::from_values<double>({5, 6, 7, 8}, {2, 2})};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(inputs[0].shape()), IntArrayRef(inputs[1].shape())};
  const std::shared_ptr<const einsum::ExecutionPlan> plan_cxx = *(*executor)->prepare(*op, shapes, DType::kFloat64);
  const Tensor out = *Tensor::empty({2, 2}, DType::kFloat64);
  const TensorView views[2] = {inputs[0].view(), inputs[1].view()};
  const cpu::SequentialContext sequential;

  bool failed = false;
  double cxx_result = 0;
  Case cases[] = {
      {"C API tf_einsum_run (prepared)    ", [&] { failed |= tf_einsum_run(&run, nullptr) != TF_CODE_OK; }, {}},
      {"C API tf_einsum (one-shot)        ", [&] { failed |= tf_einsum(&once, nullptr) != TF_CODE_OK; }, {}},
      {"C++ einsum::einsum (eager context)",
       [&] {
         Result<Tensor> r = einsum::einsum(ctx, op, inputs);
         if (r.ok()) {
           cxx_result = static_cast<const double*>(r->data())[3];
         } else {
           failed = true;
         }
       },
       {}},
      {"C++ einsum::einsum (subscripts)   ",
       [&] {
         Result<Tensor> r = einsum::einsum(ctx, "ij,jk->ik", inputs);
         if (r.ok()) {
           cxx_result = static_cast<const double*>(r->data())[3];
         } else {
           failed = true;
         }
       },
       {}},
      // The floor under both: the executor running the compiled plan into a
      // preallocated output (what tf_einsum_run calls after its checks).
      {"C++ CpuEinsumExecutor::execute    ",
       [&] { failed |= !(*executor)->execute(*plan_cxx, views, out.view(), sequential).ok(); },
       {}},
  };
  measure(cases, calls, batches);
  const double c_result = c[0] + c[1] + c[2] + c[3];

  if (failed || c_result != 19 + 22 + 43 + 50 || cxx_result != 50 || static_cast<const double*>(out.data())[3] != 50) {
    std::fprintf(stderr, "a call failed or gave a wrong result\n");
    return 1;
  }
  std::printf("2x2 float64 matmul \"ij,jk->ik\", calling thread, native GEMM; median of %d batches of %d calls\n",
              batches, calls);
  for (Case& c : cases) std::printf("  %s  %8.1f ns/call\n", c.name, c.median());
  std::printf("  (the last: the plan run into a preallocated output, the floor under the others)\n");
  tf_einsum_plan_destroy(plan);
  tf_runtime_destroy(rt);
  return 0;
}
