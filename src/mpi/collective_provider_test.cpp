// Collective nodes over MPI (collective_provider.h), run by ctest under
// mpirun with 2 and 4 ranks, with the harness of mpi_test_support.h. One
// program holds every collective kind (allreduce sum and max, allgather,
// broadcast, reduce_scatter, send/recv around a ring); it is prepared once
// per rank and run several times on new data, each result against a
// reference the rank computes alone. Errors: element counts that differ
// across ranks fail the first collective on every rank, and a run rejected
// on one rank before it starts reaches the others at their first
// collective; after both the ranks are still in step. A prepare failure on
// one rank becomes the same typed error on all ranks (prepare_on_all_ranks)
// instead of leaving the others waiting in the first collective. Two
// runtimes over two communicators in one process stay independent.
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpi_test_support.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/mpi.h"
#include "tenferro/mpi/collective_provider.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::mpi {
namespace {

using program::CollectiveKind;
using program::CollectiveReduction;
using program::CollectiveSpec;
using program::CoreSemanticOp;
using program::ProgramBuilder;
using program::ProgramValue;
using runtime::TensorList;

constexpr std::uint64_t kComm = 3;
constexpr std::int64_t kCols = 3;

// A runtime with the CPU engine on the calling thread, communicator kComm
// bound to `comm`, and a capacity of 1 for its collective lease.
Result<runtime::Runtime> make_runtime(std::shared_ptr<Communicator> comm) {
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder));
  builder.add_collective(collective_registration(std::move(comm), kComm));
  builder.config().policies().capacities.push_back(runtime::ResourceAmount{collective_lease_key(kComm), 1});
  return builder.build();
}

// Inputs x: float64[n] (n symbolic, so that ranks may disagree) and
// z: float64[ranks, 3]. Outputs, in order: allreduce_sum(-x),
// allreduce_max(x), allgather(x), broadcast from the last rank(x),
// reduce_scatter_sum(z), send(x) to the next rank, recv from the previous
// rank (even ranks send first, odd ranks receive first), reduce_sum(x) to
// rank 0 (x itself elsewhere).
std::shared_ptr<const program::SemanticProgram> all_collectives(const Communicator& comm) {
  const std::int64_t ranks = comm.size();
  auto spec = [&](CollectiveKind kind) {
    CollectiveSpec s;
    s.kind = kind;
    s.communicator = kComm;
    s.ranks = ranks;
    return s;
  };
  ProgramBuilder b;
  ProgramValue x = b.add_input(DType::kFloat64, {program::SymbolicExtent::unknown()}, "x").value();
  ProgramValue z = b.add_input(DType::kFloat64, {ranks, kCols}, "z").value();
  ProgramValue neg = b.emit(CoreSemanticOp::kNeg, {x}).value();
  ProgramValue sum = b.emit_collective(spec(CollectiveKind::kAllReduce), neg).value();
  CollectiveSpec max_spec = spec(CollectiveKind::kAllReduce);
  max_spec.reduction = CollectiveReduction::kMax;
  ProgramValue max = b.emit_collective(max_spec, x).value();
  ProgramValue gathered = b.emit_collective(spec(CollectiveKind::kAllGather), x).value();
  CollectiveSpec bcast = spec(CollectiveKind::kBroadcast);
  bcast.peer = ranks - 1;
  ProgramValue broadcast = b.emit_collective(bcast, x).value();
  ProgramValue scattered = b.emit_collective(spec(CollectiveKind::kReduceScatter), z).value();
  CollectiveSpec send = spec(CollectiveKind::kSend);
  send.peer = (comm.rank() + 1) % ranks;
  send.tag = 7;
  CollectiveSpec recv = spec(CollectiveKind::kRecv);
  recv.peer = (comm.rank() + ranks - 1) % ranks;
  recv.tag = 7;
  ProgramValue sent, received;
  if (comm.rank() % 2 == 0) {
    sent = b.emit_collective(send, x).value();
    received = b.emit_collective(recv, neg).value();
  } else {
    received = b.emit_collective(recv, neg).value();
    sent = b.emit_collective(send, x).value();
  }
  ProgramValue reduced = b.emit_collective(spec(CollectiveKind::kReduce), x).value();
  return b.freeze({sum, max, gathered, broadcast, scattered, sent, received, reduced}).value().program;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>().value(); }

// Checks one run's outputs for data seeded with `seed` + rank.
void check_outputs(Checks& c, const Communicator& comm, const TensorList& out, int seed, std::int64_t n,
                   const std::string& what) {
  const int ranks = comm.size();
  auto x_of = [&](int rank) { return values(filled<double>({n}, seed + rank)); };
  auto z_of = [&](int rank) { return values(filled<double>({ranks, kCols}, seed + 50 + rank)); };
  std::vector<double> sum(static_cast<std::size_t>(n), 0.0), max = x_of(0), gathered, scattered(kCols, 0.0);
  for (int q = 0; q < ranks; ++q) {
    const std::vector<double> x = x_of(q);
    const std::vector<double> z = z_of(q);
    for (std::size_t i = 0; i < x.size(); ++i) {
      sum[i] -= x[i];
      max[i] = std::max(max[i], x[i]);
    }
    gathered.insert(gathered.end(), x.begin(), x.end());
    for (std::int64_t j = 0; j < kCols; ++j) scattered[j] += z[comm.rank() * kCols + j];
  }
  if (out.size() != 8) {
    c.check(false, what + ": 8 outputs");
    return;
  }
  c.check(max_diff(values(out[0]), sum) <= 1e-12, what + ": allreduce sum");
  c.check(max_diff(values(out[1]), max) == 0.0, what + ": allreduce max");
  c.check(max_diff(values(out[2]), gathered) == 0.0 && out[2].shape()[0] == ranks, what + ": allgather");
  c.check(max_diff(values(out[3]), x_of(ranks - 1)) == 0.0, what + ": broadcast");
  c.check(max_diff(values(out[4]), scattered) <= 1e-12, what + ": reduce_scatter");
  c.check(max_diff(values(out[5]), x_of(comm.rank())) == 0.0, what + ": send passes its operand on");
  c.check(max_diff(values(out[6]), x_of((comm.rank() + ranks - 1) % ranks)) == 0.0, what + ": recv");
  // reduce to rank 0: the sum of x there, this rank's own x elsewhere.
  std::vector<double> x_sum(sum.size(), 0.0);
  for (std::size_t i = 0; i < sum.size(); ++i) x_sum[i] = -sum[i];
  c.check(max_diff(values(out[7]), comm.rank() == 0 ? x_sum : x_of(comm.rank())) <= 1e-12, what + ": reduce");
}

TensorList inputs_for(const Communicator& comm, int seed, std::int64_t n) {
  return {filled<double>({n}, seed + comm.rank()), filled<double>({comm.size(), kCols}, seed + 50 + comm.rank())};
}

void test_prepared_collectives(Checks& c, std::shared_ptr<Communicator> comm) {
  Result<runtime::Runtime> rt = make_runtime(comm);
  c.check_ok(rt.status(), "runtime");
  if (!rt.ok()) return;
  auto program = all_collectives(*comm);
  const TensorList first = inputs_for(*comm, 0, 5);
  auto prepared = rt->prepare_for(program, runtime::InputSignature::of(first));
  c.check_ok(prepared.status(), "prepare");
  if (!prepared.ok()) return;
  int nodes = 0;
  for (std::size_t i = 0; i < (*prepared)->num_nodes(); ++i)
    nodes += (*prepared)->node(i).kind == runtime::ScheduledNodeKind::kCollective ? 1 : 0;
  c.check(nodes == 8, "eight collective nodes, found " + std::to_string(nodes));
  for (int run = 0; run < 3; ++run) {
    const int seed = 1000 * run;
    Result<TensorList> out = rt->run_prepared(**prepared, inputs_for(*comm, seed, 5));
    c.check_ok(out.status(), "run " + std::to_string(run));
    if (out.ok()) check_outputs(c, *comm, *out, seed, 5, "run " + std::to_string(run));
  }
  c.check(rt->execution_metrics().collectives == 24, "24 collective nodes ran");

  // Element counts differ across ranks: each rank prepares its own shape,
  // and the first collective fails on every rank with kShapeMismatch.
  const std::int64_t n = comm->rank() == comm->size() - 1 ? 6 : 5;
  Result<TensorList> mismatch = rt->run(program, inputs_for(*comm, 7, n));
  c.check_code(mismatch.status(), ErrorCode::kShapeMismatch, "element counts differ across ranks");
  // Rank 0's inputs are rejected before its run starts: its collectives
  // are abandoned, and the others fail at their first one with its code.
  TensorList inputs = inputs_for(*comm, 9, 5);
  if (comm->rank() == 0) inputs[1] = Tensor::zeros({comm->size(), kCols}, DType::kFloat32).value();
  Result<TensorList> rejected = rt->run_prepared(**prepared, inputs);
  c.check_code(rejected.status(), ErrorCode::kDTypeMismatch, "one rank's rejected run on all ranks");
  if (comm->rank() != 0) {
    c.check(rejected.status().message().find("rank 0") != std::string::npos,
            "the error names the failed rank: " + rejected.status().to_string());
  }
  // Still in step.
  Result<TensorList> again = rt->run_prepared(**prepared, inputs_for(*comm, 11, 5));
  c.check_ok(again.status(), "run after errors");
  if (again.ok()) check_outputs(c, *comm, *again, 11, 5, "run after errors");
}

// x -> all_reduce(sum) on communicator id `communicator`.
std::shared_ptr<const program::SemanticProgram> allreduce_program(const Communicator& comm,
                                                                  std::uint64_t communicator) {
  ProgramBuilder b;
  ProgramValue x = b.add_input(DType::kFloat64, {4}, "x").value();
  CollectiveSpec spec;
  spec.communicator = communicator;
  spec.ranks = comm.size();
  ProgramValue sum = b.emit_collective(spec, x).value();
  return b.freeze({sum}).value().program;
}

// The last rank's program names a communicator id its runtime has no
// provider for: its prepare fails (kUnsupportedOperation) while the other
// ranks prepare theirs. prepare_on_all_ranks makes that an error on every
// rank, so nobody runs the allreduce the last rank will never reach.
void test_prepare_failure_on_one_rank(Checks& c, std::shared_ptr<Communicator> comm) {
  Result<runtime::Runtime> rt = make_runtime(comm);
  c.check_ok(rt.status(), "runtime");
  if (!rt.ok()) return;
  const Tensor x = filled<double>({4}, comm->rank());
  const runtime::InputSignature signature = runtime::InputSignature::of(std::span<const Tensor>(&x, 1));
  const bool last = comm->rank() == comm->size() - 1;
  auto failing = prepare_on_all_ranks(*comm, *rt, allreduce_program(*comm, last ? kComm + 1 : kComm), signature);
  c.check_code(failing.status(), ErrorCode::kUnsupportedOperation, "one rank's prepare failure on all ranks");
  if (!last) {
    c.check(failing.status().message().find("rank " + std::to_string(comm->size() - 1)) != std::string::npos,
            "the error names the failed rank: " + failing.status().to_string());
  }
  // Still in step: the same program prepared everywhere runs.
  auto prepared = prepare_on_all_ranks(*comm, *rt, allreduce_program(*comm, kComm), signature);
  c.check_ok(prepared.status(), "prepare on all ranks");
  if (!prepared.ok()) return;
  Result<TensorList> out = rt->run_prepared(**prepared, std::span<const Tensor>(&x, 1));
  c.check_ok(out.status(), "run after a prepare failure");
  if (!out.ok()) return;
  std::vector<double> sum(4, 0.0);
  for (int q = 0; q < comm->size(); ++q) {
    const std::vector<double> v = values(filled<double>({4}, q));
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  c.check(max_diff(values((*out)[0]), sum) <= 1e-12, "allreduce after a prepare failure");
}

// Two runtimes, each with its own communicator under the same id: one's
// collectives never meet the other's.
void test_two_runtimes(Checks& c) {
  Result<std::shared_ptr<Communicator>> ca = Communicator::duplicate(MPI_COMM_WORLD);
  Result<std::shared_ptr<Communicator>> cb = Communicator::duplicate(MPI_COMM_WORLD);
  c.check_ok(ca.status(), "communicator a");
  c.check_ok(cb.status(), "communicator b");
  if (!ca.ok() || !cb.ok()) return;
  Result<runtime::Runtime> a = make_runtime(*ca);
  Result<runtime::Runtime> b = make_runtime(*cb);
  c.check_ok(a.status(), "runtime a");
  c.check_ok(b.status(), "runtime b");
  if (!a.ok() || !b.ok()) return;
  auto program = all_collectives(**ca);
  Result<TensorList> out_a = a->run(program, inputs_for(**ca, 20, 4));
  Result<TensorList> out_b = b->run(program, inputs_for(**cb, 30, 4));
  c.check_ok(out_a.status(), "runtime a runs");
  c.check_ok(out_b.status(), "runtime b runs");
  if (out_a.ok()) check_outputs(c, **ca, *out_a, 20, 4, "runtime a");
  if (out_b.ok()) check_outputs(c, **cb, *out_b, 30, 4, "runtime b");
  c.check(a->execution_metrics().collectives == 8 && b->execution_metrics().collectives == 8,
          "each runtime ran its own eight collective nodes");
}

}  // namespace
}  // namespace tenferro::mpi

int main(int argc, char** argv) {
  return tenferro::mpi::run_on_ranks(
      argc, argv, "tenferro collective node tests",
      [](tenferro::mpi::Checks& c, const std::shared_ptr<tenferro::mpi::Communicator>& comm) {
        tenferro::mpi::test_prepared_collectives(c, comm);
        tenferro::mpi::test_prepare_failure_on_one_rank(c, comm);
        tenferro::mpi::test_two_runtimes(c);
      });
}
