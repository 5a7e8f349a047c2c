// The mpi component's tests, run by ctest under mpirun with 2 and 4 ranks
// (no GoogleTest: every rank must take part in every collective, and a
// failed check on one rank must not stop it from reaching the next one).
// Each check records a failure locally; at the end the failure counts are
// summed over the ranks and the program exits non-zero on every rank when
// any rank failed. The cases: every collective against a reference the rank
// computes alone; an error on one rank surfacing on all ranks (and the
// ranks staying in step for the next call); two communicators and two
// runtimes in one process staying independent; a sliced einsum over the
// ranks (its rank sum a collective node of the rank's runtime) equal to the
// one-rank contraction (round robin of slices, and one label range per
// rank), and one rank's contraction or prepare failure surfacing on all
// ranks.
#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpi_test_support.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/mpi.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::mpi {
namespace {

template <class T>
void allreduce_case(Checks& c, const Communicator& comm, ReduceOp op, const char* name) {
  Tensor t = filled<T>({3, 5}, comm.rank());
  std::vector<T> expected = filled<T>({3, 5}, 0).template to_vector<T>().value();
  for (int r = 1; r < comm.size(); ++r) {
    const std::vector<T> other = filled<T>({3, 5}, r).template to_vector<T>().value();
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if constexpr (std::is_same_v<T, std::complex<double>>) {
        expected[i] += other[i];
      } else {
        expected[i] = op == ReduceOp::kSum ? expected[i] + other[i] : std::max(expected[i], other[i]);
      }
    }
  }
  // Out of place first: the input is only read.
  const std::vector<T> before = t.template to_vector<T>().value();
  Tensor out = Tensor::zeros({3, 5}, t.dtype()).value();
  c.check_ok(allreduce(comm, t, out, op), std::string(name) + " out of place");
  c.check(t.template to_vector<T>().value() == before, std::string(name) + " out of place: input unchanged");
  c.check_ok(allreduce(comm, t, op), name);
  // The reduction order differs from this loop's: float32 rounds differently.
  const double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  c.check(max_diff(t.template to_vector<T>().value(), expected) < tolerance, std::string(name) + ": values");
  c.check(max_diff(out.template to_vector<T>().value(), expected) < tolerance,
          std::string(name) + " out of place: values");
}

void test_collectives(Checks& c, const Communicator& comm) {
  allreduce_case<double>(c, comm, ReduceOp::kSum, "allreduce sum float64");
  allreduce_case<double>(c, comm, ReduceOp::kMax, "allreduce max float64");
  allreduce_case<float>(c, comm, ReduceOp::kSum, "allreduce sum float32");
  allreduce_case<std::int32_t>(c, comm, ReduceOp::kMax, "allreduce max int32");
  allreduce_case<std::int64_t>(c, comm, ReduceOp::kSum, "allreduce sum int64");
  allreduce_case<std::complex<double>>(c, comm, ReduceOp::kSum, "allreduce sum complex128");

  {  // A transposed view: reduced through one copy, the result written back
     // into the view (Note [Collectives on views]), so the base sees it too.
    Tensor base = filled<double>({4, 3}, comm.rank());
    Tensor t = base.transpose(0, 1).value();
    std::vector<double> expected(12, 0.0);
    for (int r = 0; r < comm.size(); ++r) {
      const std::vector<double> v = filled<double>({4, 3}, r).transpose(0, 1).value().to_vector<double>().value();
      for (std::size_t i = 0; i < v.size(); ++i) expected[i] += v[i];
    }
    // Out of place from the view into a transposed output, and with the
    // view as its own output (the in-place call).
    Tensor out_base = Tensor::zeros({4, 3}, DType::kFloat64).value();
    Tensor out = out_base.transpose(0, 1).value();
    c.check_ok(allreduce(comm, t, out, ReduceOp::kSum), "allreduce transposed out of place");
    c.check(max_diff(out_base.transpose(0, 1).value().to_vector<double>().value(), expected) < 1e-12,
            "allreduce transposed out of place: values in the output's base");
    Tensor self = filled<double>({4, 3}, comm.rank()).transpose(0, 1).value();
    c.check_ok(allreduce(comm, self, self, ReduceOp::kSum), "allreduce with the input as output");
    c.check(max_diff(self.to_vector<double>().value(), expected) < 1e-12, "allreduce with the input as output: values");
    c.check_ok(allreduce(comm, t, ReduceOp::kSum), "allreduce transposed");
    c.check(max_diff(t.to_vector<double>().value(), expected) < 1e-12, "allreduce transposed: values");
    c.check(t.data() == base.data() && !t.is_contiguous(), "allreduce transposed: still a view of the base");
    c.check(max_diff(base.transpose(0, 1).value().to_vector<double>().value(), expected) < 1e-12,
            "allreduce transposed: the base holds the sum");
    // Every other row of a matrix: broadcast into a strided slice leaves the
    // rows between untouched.
    Tensor rows = filled<double>({4, 3}, comm.rank());
    Tensor every_other = rows.slice(0, 0, 4, 2).value();
    c.check_ok(broadcast(comm, every_other, 0), "broadcast strided");
    const std::vector<double> got = rows.to_vector<double>().value();
    const std::vector<double> root = filled<double>({4, 3}, 0).to_vector<double>().value();
    const std::vector<double> own = filled<double>({4, 3}, comm.rank()).to_vector<double>().value();
    bool rows_ok = true;
    for (std::size_t i = 0; i < got.size(); ++i) rows_ok = rows_ok && got[i] == ((i / 3) % 2 == 0 ? root[i] : own[i]);
    c.check(rows_ok, "broadcast strided: even rows from the root, odd rows kept");
  }
  {  // allgather: rank r fills block r.
    Tensor t = Tensor::zeros({comm.size(), 4}, DType::kFloat64).value();
    auto* p = static_cast<double*>(t.data());
    for (int i = 0; i < 4; ++i) p[comm.rank() * 4 + i] = value_of(comm.rank(), i);
    c.check_ok(allgather(comm, t), "allgather");
    std::vector<double> expected;
    for (int r = 0; r < comm.size(); ++r)
      for (int i = 0; i < 4; ++i) expected.push_back(value_of(r, i));
    c.check(max_diff(t.to_vector<double>().value(), expected) == 0.0, "allgather: values");
  }
  {  // broadcast from the last rank.
    const int root = comm.size() - 1;
    Tensor t = filled<double>({2, 3}, comm.rank());
    c.check_ok(broadcast(comm, t, root), "broadcast");
    c.check(max_diff(t.to_vector<double>().value(), filled<double>({2, 3}, root).to_vector<double>().value()) == 0.0,
            "broadcast: values");
  }
  {  // reduce to the last rank: the sum there, the others' tensors unchanged.
    const int root = comm.size() - 1;
    Tensor t = filled<double>({2, 3}, comm.rank());
    c.check_ok(reduce(comm, t, ReduceOp::kSum, root), "reduce");
    std::vector<double> expected = filled<double>({2, 3}, comm.rank()).to_vector<double>().value();
    if (comm.rank() == root) {
      expected.assign(6, 0.0);
      for (int r = 0; r < comm.size(); ++r) {
        const std::vector<double> v = filled<double>({2, 3}, r).to_vector<double>().value();
        for (std::size_t i = 0; i < v.size(); ++i) expected[i] += v[i];
      }
    }
    c.check(max_diff(t.to_vector<double>().value(), expected) < 1e-12, "reduce: values");
    Tensor m = filled<std::int32_t>({4}, comm.rank());
    c.check_ok(reduce(comm, m, ReduceOp::kMax, 0), "reduce max int32");
    std::vector<std::int32_t> most = filled<std::int32_t>({4}, comm.rank()).to_vector<std::int32_t>().value();
    for (int r = 0; comm.rank() == 0 && r < comm.size(); ++r) {
      const std::vector<std::int32_t> v = filled<std::int32_t>({4}, r).to_vector<std::int32_t>().value();
      for (std::size_t i = 0; i < v.size(); ++i) most[i] = std::max(most[i], v[i]);
    }
    c.check(m.to_vector<std::int32_t>().value() == most, "reduce max int32: values");
  }
  {  // reduce_scatter: block b of rank r holds value_of(r, b * 4 + i).
    Tensor t = filled<double>({comm.size(), 4}, comm.rank());
    Result<Tensor> mine = reduce_scatter(comm, t, ReduceOp::kSum);
    c.check_ok(mine.status(), "reduce_scatter");
    if (mine.ok()) {
      std::vector<double> expected(4, 0.0);
      for (int r = 0; r < comm.size(); ++r)
        for (int i = 0; i < 4; ++i) expected[static_cast<std::size_t>(i)] += value_of(r, comm.rank() * 4 + i);
      c.check(mine->rank() == 1 && mine->size(0) == 4, "reduce_scatter: block shape");
      c.check(max_diff(mine->to_vector<double>().value(), expected) < 1e-12, "reduce_scatter: values");
    }
  }
  {  // send/recv around a ring (even ranks send first).
    const int next = (comm.rank() + 1) % comm.size(), prev = (comm.rank() + comm.size() - 1) % comm.size();
    Tensor out = filled<double>({5}, comm.rank());
    Tensor in = Tensor::zeros({5}, DType::kFloat64).value();
    if (comm.rank() % 2 == 0) {
      c.check_ok(send(comm, out, next, 3), "send");
      c.check_ok(recv(comm, in, prev, 3), "recv");
    } else {
      c.check_ok(recv(comm, in, prev, 3), "recv");
      c.check_ok(send(comm, out, next, 3), "send");
    }
    c.check(max_diff(in.to_vector<double>().value(), filled<double>({5}, prev).to_vector<double>().value()) == 0.0,
            "send/recv: values");
  }
}

// Errors found on one rank surface on every rank, and the ranks stay in step.
void test_errors(Checks& c, const Communicator& comm) {
  const int last = comm.size() - 1;
  if (comm.size() >= 2) {  // an intercommunicator between the even and the odd ranks
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    const int color = comm.rank() % 2;
    MPI_Comm_split(comm.comm(), color, comm.rank(), &half);
    MPI_Intercomm_create(half, 0, comm.comm(), 1 - color, 11, &inter);
    c.check_code(Communicator::duplicate(inter).status(), ErrorCode::kInvalidArgument, "an intercommunicator");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  {
    Tensor t = comm.rank() == 0 ? filled<float>({3}, 0) : filled<double>({3}, comm.rank());
    c.check_code(allreduce(comm, t, ReduceOp::kSum), ErrorCode::kDTypeMismatch, "dtype mismatch on rank 0");
  }
  {
    Tensor t = filled<double>({comm.rank() == last ? 4 : 3}, comm.rank());
    c.check_code(allreduce(comm, t, ReduceOp::kSum), ErrorCode::kShapeMismatch, "element count mismatch");
  }
  {  // Out of place: an output of another shape or dtype on one rank, or
     // partly overlapping its input, fails on every rank.
    Tensor in = filled<double>({6}, comm.rank());
    Tensor out = Tensor::zeros({comm.rank() == last ? 5 : 6}, DType::kFloat64).value();
    c.check_code(allreduce(comm, in, out, ReduceOp::kSum), ErrorCode::kShapeMismatch, "out of place: output shape");
    Tensor typed = Tensor::zeros({6}, comm.rank() == 0 ? DType::kFloat32 : DType::kFloat64).value();
    c.check_code(allreduce(comm, in, typed, ReduceOp::kSum), ErrorCode::kDTypeMismatch, "out of place: output dtype");
    Tensor row = filled<double>({8}, comm.rank());
    Tensor head = row.slice(0, 0, 6).value(), tail = row.slice(0, 2, 8).value();
    const Status overlap = allreduce(comm, head, comm.rank() == last ? tail : in, ReduceOp::kSum);
    c.check_code(overlap, ErrorCode::kInvalidArgument, "out of place: partial overlap");
    c.check(overlap.message().find("overlap") != std::string_view::npos, "names the overlap: " + overlap.to_string());
  }
  {
    // As many elements in another shape: plain MPI accepts it, tenferro does not.
    Tensor t = comm.rank() == last ? filled<double>({4}, 1) : filled<double>({2, 2}, 1);
    const Status s = allreduce(comm, t, ReduceOp::kSum);
    c.check_code(s, ErrorCode::kShapeMismatch, "shape mismatch of as many elements");
    c.check(s.message().find("expected the same shape") != std::string_view::npos, "names the shape: " + s.to_string());
  }
  {
    Tensor t = comm.rank() == last ? Tensor() : filled<double>({3}, comm.rank());
    const Status s = broadcast(comm, t, 0);
    c.check_code(s, ErrorCode::kInvalidArgument, "undefined tensor on the last rank");
    if (comm.rank() != last) {
      c.check(s.message().find("rank " + std::to_string(last)) != std::string_view::npos,
              "the others name the failing rank: " + s.to_string());
    }
  }
  {
    Tensor t = filled<std::complex<double>>({2}, comm.rank());
    c.check_code(allreduce(comm, t, ReduceOp::kMax), ErrorCode::kInvalidArgument, "max of complex");
    c.check_code(reduce(comm, t, ReduceOp::kMax, 0), ErrorCode::kInvalidArgument, "reduce max of complex");
  }
  {
    Tensor t = filled<double>({2}, comm.rank());
    c.check_code(broadcast(comm, t, comm.rank() == 0 ? 0 : 1), ErrorCode::kInvalidArgument, "roots differ");
    c.check_code(broadcast(comm, t, comm.size()), ErrorCode::kInvalidArgument, "root out of range");
    c.check_code(reduce(comm, t, ReduceOp::kSum, comm.rank() == 0 ? 0 : 1), ErrorCode::kInvalidArgument,
                 "reduce roots differ");
    c.check_code(reduce(comm, t, ReduceOp::kSum, -1), ErrorCode::kInvalidArgument, "reduce root out of range");
    // Different collectives on different ranks: an error, not a hang.
    c.check_code(comm.rank() == 0 ? reduce(comm, t, ReduceOp::kSum, 0) : allreduce(comm, t, ReduceOp::kSum),
                 ErrorCode::kInvalidArgument, "reduce on rank 0, allreduce elsewhere");
    Tensor wrong = Tensor::zeros({comm.size() + 1, 2}, DType::kFloat64).value();
    c.check_code(allgather(comm, wrong), ErrorCode::kShapeMismatch, "allgather leading extent");
  }
  {  // agree: one rank's failure, with its code, on all ranks.
    const Status local =
        comm.rank() == last ? Status(Error(ErrorCode::kResourceExhausted, ErrorStage::kNone, "boom")) : ok_status();
    c.check_code(agree(comm, local), ErrorCode::kResourceExhausted, "agree");
    c.check_ok(agree(comm, ok_status()), "agree when all are ok");
  }
  if (comm.size() >= 2) {  // recv of the wrong dtype consumes the message; the next pair matches.
    if (comm.rank() == 0) {
      c.check_ok(send(comm, filled<float>({3}, 0), 1, 9), "send float32");
      c.check_ok(send(comm, filled<double>({3}, 0), 1, 9), "send float64");
    } else if (comm.rank() == 1) {
      Tensor in = Tensor::zeros({3}, DType::kFloat64).value();
      c.check_code(recv(comm, in, 0, 9), ErrorCode::kDTypeMismatch, "recv dtype mismatch");
      c.check_ok(recv(comm, in, 0, 9), "recv after a mismatch");
      c.check(max_diff(in.to_vector<double>().value(), filled<double>({3}, 0).to_vector<double>().value()) == 0.0,
              "recv after a mismatch: values");
    }
  }
  {  // An MPI error code, translated with MPI_Error_string.
    double x = 0.0;
    const Status s = mpi_status(MPI_Send(&x, 1, MPI_DOUBLE, comm.size() + 5, 0, comm.comm()), "MPI_Send");
    c.check_code(s, ErrorCode::kUnavailable, "MPI error translated");
    c.check(s.message().find("MPI_Send") != std::string_view::npos, "MPI error names the call: " + s.to_string());
  }
  {  // Still in step: a plain collective after all of the above.
    Tensor t = Tensor::scalar<double>(1.0).value();
    c.check_ok(allreduce(comm, t, ReduceOp::kSum), "allreduce after errors");
    c.check(t.to_vector<double>().value()[0] == comm.size(), "allreduce after errors: value");
  }
}

// The communicator id the rank runtimes bind their communicator to.
constexpr std::uint64_t kSliceComm = 5;

// One rank's engine pieces: a Runtime with the CPU engine, the native
// einsum and collective id kSliceComm bound to `comm`, plus the
// communicator its application gave it.
struct RankRuntime {
  std::shared_ptr<Communicator> comm;
  std::shared_ptr<einsum::CpuEinsumExecutor> executor;
  std::shared_ptr<const cpu::CpuDomainSet> domains;
  std::optional<runtime::Runtime> runtime;
};

Result<RankRuntime> make_rank_runtime() {
  RankRuntime r;
  TENFERRO_ASSIGN_OR_RETURN(r.comm, Communicator::duplicate(MPI_COMM_WORLD));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
  TENFERRO_ASSIGN_OR_RETURN(r.executor,
                            einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(gemm)));
  // One single-thread domain over this process's allowed CPUs.
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuTopology topology, cpu::CpuTopology::discover());
  cpu::CpuDomainSpec spec;
  spec.id = CpuDomainId(1);
  spec.cpus = topology.allowed_cpus();
  spec.thread_budget = 1;
  const cpu::CpuDomainSpec specs[] = {spec};
  TENFERRO_ASSIGN_OR_RETURN(r.domains, cpu::CpuDomainSet::create_managed(topology, specs));
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions options;
  options.gemm_provider = gemm;
  options.domains = r.domains;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, options));
  builder.add_extension_module(einsum::cpu_extension_module(options.id, r.executor));
  builder.add_collective(collective_registration(r.comm, kSliceComm));
  builder.config().policies().capacities.push_back(runtime::ResourceAmount{collective_lease_key(kSliceComm), 1});
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  r.runtime.emplace(std::move(rt));
  return r;
}

// Two runtimes, two communicators: messages on one never match receives on
// the other, and each runtime's sliced einsum over the ranks equals its
// own one-rank einsum.
void test_independent_runtimes_and_sliced_einsum(Checks& c) {
  Result<RankRuntime> a = make_rank_runtime();
  Result<RankRuntime> b = make_rank_runtime();
  c.check_ok(a.status(), "runtime a");
  c.check_ok(b.status(), "runtime b");
  if (!a.ok() || !b.ok()) return;
  const Communicator& ca = *a->comm;
  const Communicator& cb = *b->comm;
  if (ca.size() >= 2) {
    // Rank 0 sends on a, then on b, same tag; rank 1 receives b first.
    if (ca.rank() == 0) {
      c.check_ok(send(ca, filled<double>({2}, 10), 1, 1), "send on a");
      c.check_ok(send(cb, filled<double>({2}, 20), 1, 1), "send on b");
    } else if (ca.rank() == 1) {
      Tensor x = Tensor::zeros({2}, DType::kFloat64).value(), y = Tensor::zeros({2}, DType::kFloat64).value();
      c.check_ok(recv(cb, y, 0, 1), "recv on b");
      c.check_ok(recv(ca, x, 0, 1), "recv on a");
      c.check(max_diff(y.to_vector<double>().value(), filled<double>({2}, 20).to_vector<double>().value()) == 0.0,
              "b's message on b");
      c.check(max_diff(x.to_vector<double>().value(), filled<double>({2}, 10).to_vector<double>().value()) == 0.0,
              "a's message on a");
    }
  }

  // An MPS-like network; same data on every rank.
  const std::string subscripts = "ab,bcd,cef,dg,fgh->aeh";
  const std::vector<std::vector<std::int64_t>> shapes = {{6, 7}, {7, 5, 8}, {5, 4, 6}, {8, 9}, {6, 9, 3}};
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < shapes.size(); ++i) inputs.push_back(filled<double>(shapes[i], 50 + static_cast<int>(i)));
  std::vector<TensorView> views;
  for (const Tensor& t : inputs) views.push_back(t.view());
  std::vector<IntArrayRef> refs(shapes.begin(), shapes.end());

  Result<einsum::Network> net = einsum::Network::bind(subscripts, refs);
  c.check_ok(net.status(), "bind");
  if (!net.ok()) return;
  Result<einsum::ContractionTree> tree = einsum::plan(*net);
  c.check_ok(tree.status(), "plan");
  if (!tree.ok()) return;
  einsum::SlicingOptions options;
  options.min_slices = 2 * ca.size();
  options.workers = ca.size();
  options.max_intermediate_bytes = tree->cost().max_intermediate_elements * 8.0 / 4.0;
  Result<einsum::SlicedContraction> sliced = einsum::SlicedContraction::plan(*tree, options);
  c.check_ok(sliced.status(), "slicing");
  if (!sliced.ok()) return;
  c.check(sliced->num_slices() >= options.min_slices, "enough slices for the ranks");
  for (RankRuntime* r : {&*a, &*b}) {
    Result<einsum::WorkerSliceExecutor> runner = einsum::WorkerSliceExecutor::create(
        einsum::WorkerSlicing::round_robin(*sliced, r->comm->size()), r->comm->rank(), r->executor);
    c.check_ok(runner.status(), "slice executor");
    if (!runner.ok()) return;
    Tensor out = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
    einsum::SliceRunStats stats;
    const std::uint64_t donations = r->runtime->execution_metrics().donations;
    const Storage* storage = out.storage().get();
    c.check_ok(run_slices_over_ranks(*r->comm, *r->runtime, kSliceComm, *runner, views, out,
                                     r->domains->default_domain(), &stats),
               "sliced einsum over ranks");
    // The rank sum ran as the runtime's collective node, in place in `out`.
    c.check(r->runtime->execution_metrics().donations == donations + 1 && out.storage().get() == storage,
            "the rank sum reduces the output in place");
    c.check(stats.slices == (sliced->num_slices() - r->comm->rank() + r->comm->size() - 1) / r->comm->size(),
            "round-robin share");
    // The one-rank reference: this runtime's own eager einsum, unsliced.
    runtime::EagerContext eager = r->runtime->on();
    Result<Tensor> whole = einsum::einsum(eager, subscripts, inputs);
    c.check_ok(whole.status(), "eager einsum");
    if (!whole.ok()) return;
    const std::vector<double> expected = whole->to_vector<double>().value();
    double scale = 0.0;
    for (double v : expected) scale = std::max(scale, std::abs(v));
    c.check(max_diff(out.to_vector<double>().value(), expected) <= 1e-12 * std::max(scale, 1.0),
            "sliced einsum over ranks equals one rank");
  }
  // Note [Range slicing]: one range per rank of a summed label (g, 9) and
  // of an output label (e, 4: each rank writes its rows, zero elsewhere),
  // two ranges of g per rank, and whatever WorkerSlicing::plan chooses
  // (also under a memory bound), equal to the one-rank einsum.
  {
    runtime::EagerContext eager = a->runtime->on();
    Result<Tensor> whole = einsum::einsum(eager, subscripts, inputs);
    c.check_ok(whole.status(), "eager einsum");
    if (!whole.ok()) return;
    const std::vector<double> expected = whole->to_vector<double>().value();
    double scale = 1.0;
    for (double v : expected) scale = std::max(scale, std::abs(v));
    einsum::SlicingOptions over_ranks;
    over_ranks.workers = ca.size();
    over_ranks.min_slices = ca.size();
    std::vector<std::pair<std::string, Result<einsum::WorkerSlicing>>> splits;
    for (const char* label : {"g", "e"}) {
      einsum::LabelId id = -1;
      for (einsum::LabelId l = 0; l < net->num_labels(); ++l)
        if (net->label_name(l) == label) id = l;
      splits.emplace_back(std::string("range of ") + label, einsum::WorkerSlicing::range_split(*tree, id, over_ranks));
    }
    splits.emplace_back("planned split", einsum::WorkerSlicing::plan(*tree, over_ranks));
    // Note [Range chunks]: two ranges of g per rank, run in turn, and
    // whatever the planner chooses under a bound of a third of the peak.
    einsum::LabelId g = -1;
    for (einsum::LabelId l = 0; l < net->num_labels(); ++l)
      if (net->label_name(l) == "g") g = l;
    splits.emplace_back("two ranges of g per rank",
                        einsum::WorkerSlicing::range_split(*tree, g, over_ranks, 2 * ca.size()));
    einsum::SlicingOptions bounded = over_ranks;
    bounded.max_intermediate_bytes = tree->cost().max_intermediate_elements * 8.0 / 3.0;
    splits.emplace_back("planned split under a bound", einsum::WorkerSlicing::plan(*tree, bounded));
    for (auto& [name, split] : splits) {
      c.check_ok(split.status(), name);
      if (!split.ok()) continue;
      Result<einsum::WorkerSliceExecutor> part = einsum::WorkerSliceExecutor::create(*split, ca.rank(), a->executor);
      c.check_ok(part.status(), name + ": executor");
      if (!part.ok()) continue;
      Tensor out = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
      einsum::SliceRunStats stats;
      c.check_ok(
          run_slices_over_ranks(ca, *a->runtime, kSliceComm, *part, views, out, a->domains->default_domain(), &stats),
          name + ": over ranks");
      std::int64_t mine = 0;  // every slice of this rank's ranges
      for (const einsum::SliceExecutor& range : part->parts()) mine += range.sliced().num_slices();
      c.check(!split->is_range_split() || stats.slices == mine, name + ": a rank runs all slices of its ranges");
      c.check(max_diff(out.to_vector<double>().value(), expected) <= 1e-12 * scale, name + ": equals one rank");
      // The sum on the last rank only (a kReduce node).
      const int root = ca.size() - 1;
      Tensor at_root = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
      c.check_ok(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *part, views, at_root, a->domains->default_domain(),
                                       nullptr, root),
                 name + ": reduced to the last rank");
      if (ca.rank() == root) {
        c.check(max_diff(at_root.to_vector<double>().value(), expected) <= 1e-12 * scale,
                name + ": the root holds the sum");
      }
    }
  }
  // A failing rank (wrong input count) surfaces on all ranks without a hang.
  Result<einsum::WorkerSliceExecutor> runner = einsum::WorkerSliceExecutor::create(
      einsum::WorkerSlicing::round_robin(*sliced, ca.size()), ca.rank(), a->executor);
  if (runner.ok()) {
    Tensor out = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
    const std::span<const TensorView> some =
        ca.rank() == ca.size() - 1 ? std::span<const TensorView>(views).first(2) : std::span<const TensorView>(views);
    c.check_code(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, some, out, a->domains->default_domain()),
                 ErrorCode::kInvalidArgument, "one rank's einsum failure on all ranks");
    // Another rank's share on one rank: refused there, reported on all.
    Result<einsum::WorkerSliceExecutor> other = einsum::WorkerSliceExecutor::create(
        einsum::WorkerSlicing::round_robin(*sliced, ca.size()), (ca.rank() + 1) % ca.size(), a->executor);
    const einsum::WorkerSliceExecutor& wrong = ca.rank() == 0 && other.ok() ? *other : *runner;
    c.check_code(run_slices_over_ranks(ca, *a->runtime, kSliceComm, wrong, views, out, a->domains->default_domain()),
                 ErrorCode::kInvalidArgument, "another rank's share on rank 0, reported on all ranks");
    // A prepare failure on one rank: the last rank names a communicator id
    // its runtime has no collective provider for, so its reduction program
    // fails to prepare (kUnsupportedOperation) while the others prepare
    // theirs; every rank reports that code and none waits in the allreduce.
    const std::uint64_t id = ca.rank() == ca.size() - 1 ? kSliceComm + 100 : kSliceComm;
    einsum::SliceRunStats stats;
    c.check_code(run_slices_over_ranks(ca, *a->runtime, id, *runner, views, out, a->domains->default_domain(), &stats),
                 ErrorCode::kUnsupportedOperation, "one rank's prepare failure on all ranks");
    c.check(ca.rank() != ca.size() - 1 || stats.slices == 0, "a rank that failed to prepare contracts nothing");
    // A root outside the communicator, and roots that differ between ranks.
    c.check_code(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, views, out, a->domains->default_domain(),
                                       nullptr, ca.size()),
                 ErrorCode::kInvalidArgument, "a root outside the communicator on all ranks");
    c.check_code(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, views, out, a->domains->default_domain(),
                                       nullptr, ca.rank() == 0 ? 0 : kEveryRank),
                 ErrorCode::kInvalidArgument, "roots that differ between ranks, on all ranks");
    // Still in step: the same call with the right id on every rank.
    Tensor again = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
    c.check_ok(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, views, again, a->domains->default_domain()),
               "sliced einsum after a prepare failure");
    // A non-contiguous output is rebound; one shared with another holder
    // receives the sum in its own storage.
    Tensor shared = Tensor::empty(IntArrayRef(net->output_shape()), DType::kFloat64).value();
    const Tensor holder = shared;
    c.check_ok(run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, views, shared, a->domains->default_domain()),
               "sliced einsum into a shared output");
    const std::vector<double> reference = again.to_vector<double>().value();
    double scale = 1.0;
    for (double v : reference) scale = std::max(scale, std::abs(v));
    c.check(shared.storage().get() == holder.storage().get() &&
                max_diff(holder.to_vector<double>().value(), reference) <= 1e-12 * scale,
            "a shared output receives the sum in place");
    Tensor wide =
        Tensor::empty({net->output_shape()[2], net->output_shape()[1], net->output_shape()[0]}, DType::kFloat64)
            .value();
    Tensor strided = wide.permute({2, 1, 0}).value();
    c.check_ok(
        run_slices_over_ranks(ca, *a->runtime, kSliceComm, *runner, views, strided, a->domains->default_domain()),
        "sliced einsum into a non-contiguous output");
    c.check(max_diff(strided.to_vector<double>().value(), reference) <= 1e-12 * scale,
            "a non-contiguous output holds the sum");
  }
}

}  // namespace
}  // namespace tenferro::mpi

int main(int argc, char** argv) {
  return tenferro::mpi::run_on_ranks(
      argc, argv, "tenferro mpi tests",
      [](tenferro::mpi::Checks& c, const std::shared_ptr<tenferro::mpi::Communicator>& comm) {
        tenferro::mpi::test_collectives(c, *comm);
        tenferro::mpi::test_errors(c, *comm);
        tenferro::mpi::test_independent_runtimes_and_sliced_einsum(c);
      });
}
