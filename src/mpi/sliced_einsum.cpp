// run_slices_over_ranks (sliced_einsum.h).
#include "tenferro/mpi/sliced_einsum.h"

#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/mpi/collectives.h"

namespace tenferro::mpi {

Status run_slices_over_ranks(const Communicator& comm, const einsum::SliceExecutor& executor,
                             std::span<const TensorView> inputs, Tensor& output, const cpu::CpuResourceDomain& domain,
                             einsum::SliceRunStats* stats) {
  Status local;
  if (!output.defined() || !output.is_host()) {
    local = make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                       "sliced einsum over ranks: expected a host output tensor, found {}",
                       output.defined() ? output.to_string() : std::string("an undefined tensor"));
  } else {
    const TensorView out = output.view();
    local = domain.enter([&](const cpu::CpuDomainSession& session) {
      const cpu::CpuExecutionContext context = session.context(cpu::ParallelMode::kInner);
      return executor.run(inputs, out, context.parallel(), comm.rank(), comm.size(), stats);
    });
  }
  TENFERRO_TRY(agree(comm, local));
  return allreduce(comm, output, ReduceOp::kSum);
}

}  // namespace tenferro::mpi
