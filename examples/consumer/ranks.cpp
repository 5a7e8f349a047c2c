// tenferro::mpi from a project outside the tree (the package's optional
// mpi component): every rank contributes its rank number, allreduced in
// place. Under `mpirun -np N` each rank prints "ranks N sum S", S = N(N-1)/2.
#include <cstdio>

#include <mpi.h>
#include <tenferro/mpi.h>

using namespace tenferro;

Result<double> sum_of_ranks() {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<mpi::Communicator> comm, mpi::Communicator::duplicate(MPI_COMM_WORLD));
  TENFERRO_ASSIGN_OR_RETURN(Tensor x, Tensor::from_values<double>({static_cast<double>(comm->rank())}, {1}));
  TENFERRO_TRY(mpi::allreduce(*comm, x, mpi::ReduceOp::kSum));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> v, x.to_vector<double>());
  return v[0];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);  // the application owns MPI
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Result<double> sum = sum_of_ranks();
  if (sum.ok())
    std::printf("ranks %d sum %g\n", size, *sum);
  else
    std::fprintf(stderr, "error: %s\n", sum.status().to_string().c_str());
  MPI_Finalize();
  return sum.ok() ? 0 : 1;
}
