// tenferro::mpi from a project outside the tree (the package's optional
// mpi component), the code docs/mpi.md ("Library use") shows:
//  1. every rank contributes its rank number, allreduced in place;
//  2. a contraction sliced over the ranks: each rank contracts its share of
//     the slices of C[i,k] = sum_j A[i,j] B[j,k] and the shares are summed
//     by an allreduce node of the rank's runtime.
// Under `mpirun -np N` each rank prints "ranks N sum S einsum E", with
// S = N(N-1)/2 and E the largest difference from the unsliced product.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <mpi.h>
#include <tenferro/cpu_runtime.h>
#include <tenferro/einsum.h>
#include <tenferro/mpi.h>

using namespace tenferro;

Result<double> sum_of_ranks(mpi::Communicator& comm) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor x, Tensor::from_values<double>({static_cast<double>(comm.rank())}, {1}));
  TENFERRO_TRY(mpi::allreduce(comm, x, mpi::ReduceOp::kSum));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> v, x.to_vector<double>());
  return v[0];
}

// The sliced product over the ranks; returns the largest difference from
// the product computed on this rank alone.
Result<double> sliced_product(const std::shared_ptr<mpi::Communicator>& comm) {
  const std::int64_t m = 6, n = 40, p = 5;
  std::vector<double> a(static_cast<std::size_t>(m * n)), b(static_cast<std::size_t>(n * p));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.1 * static_cast<double>(i));  // the same on every rank
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.2 * static_cast<double>(i));
  TENFERRO_ASSIGN_OR_RETURN(Tensor ta, Tensor::from_values<double>(a, {m, n}));
  TENFERRO_ASSIGN_OR_RETURN(Tensor tb, Tensor::from_values<double>(b, {n, p}));

  // Plan once per rank, reproducibly (every rank plans the same tree), then
  // split the slices over the ranks; every rank checks that all planned the same.
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op, einsum::EinsumOp::create("ij,jk->ik"));
  const IntArrayRef shapes[] = {ta.shape(), tb.shape()};
  TENFERRO_ASSIGN_OR_RETURN(einsum::Network network, op->bind(shapes, DType::kFloat64));
  einsum::PlanningConfig config;
  config.determinism = einsum::Determinism::kReproducible;
  TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionTree tree, einsum::plan(network, {}, config));
  einsum::SlicingOptions options;
  options.min_slices = comm->size();
  options.workers = comm->size();
  Result<einsum::WorkerSlicing> split = einsum::WorkerSlicing::plan(tree, options);
  TENFERRO_TRY(mpi::agree_on_split(*comm, split, DType::kFloat64));

  // This rank's CPU domain (pinned from its position on the node, Note
  // [Rank CPU domains]) with the einsum executor, this rank's share of the
  // slices, and a runtime whose collective communicator 1 is comm.
  TENFERRO_ASSIGN_OR_RETURN(const int node_rank, mpi::node_rank(*comm));
  cpu::CpuRuntimeOptions cpu_options;
  cpu_options.threads = 1;
  cpu_options.first_cpu = node_rank;
  cpu_options.linalg = false;
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime(cpu_options));
  TENFERRO_ASSIGN_OR_RETURN(einsum::WorkerSliceExecutor runner,
                            einsum::WorkerSliceExecutor::create(*split, comm->rank(), cpu.einsum));
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, mpi::rank_runtime(comm, 1));

  TENFERRO_ASSIGN_OR_RETURN(Tensor c, Tensor::empty({m, p}, DType::kFloat64));
  const TensorView inputs[] = {ta.view(), tb.view()};
  TENFERRO_TRY(mpi::run_slices_over_ranks(*comm, rt, 1, runner, inputs, c, cpu.domains->default_domain()));

  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> got, c.to_vector<double>());
  double worst = 0.0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t k = 0; k < p; ++k) {
      double want = 0.0;
      for (std::int64_t j = 0; j < n; ++j)
        want += a[static_cast<std::size_t>(i * n + j)] * b[static_cast<std::size_t>(j * p + k)];
      worst = std::max(worst, std::abs(got[static_cast<std::size_t>(i * p + k)] - want));
    }
  }
  return worst;
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // the application owns MPI
  int status = 1;
  {
    // Everything of tenferro's is destroyed before MPI_Finalize.
    Result<std::shared_ptr<mpi::Communicator>> comm = mpi::Communicator::duplicate(MPI_COMM_WORLD);
    const Result<double> sum = comm.ok() ? sum_of_ranks(**comm) : Result<double>(comm.status());
    const Result<double> error = sum.ok() ? sliced_product(*comm) : Result<double>(sum.status());
    if (error.ok() && *error < 1e-12) {
      std::printf("ranks %d sum %g einsum %.1e\n", (*comm)->size(), *sum, *error);
      status = 0;
    } else {
      std::fprintf(stderr, "error: %s\n",
                   error.ok() ? "the sliced product differs" : error.status().to_string().c_str());
    }
  }
  MPI_Finalize();
  return status;
}
