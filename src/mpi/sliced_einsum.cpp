// run_slices_over_ranks (sliced_einsum.h): the contraction in the rank's CPU
// domain, then the rank sum as a one-node collective program.
#include "tenferro/mpi/sliced_einsum.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"
#include "tenferro/base/hash.h"
#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/mpi/collective_provider.h"
#include "tenferro/mpi/collectives.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::mpi {
namespace {

// partial -> all_reduce(sum) over `communicator` (reduce(sum) to `root`
// when root >= 0), for `partial`'s dtype and shape.
Result<std::shared_ptr<const program::SemanticProgram>> rank_sum_program(const Tensor& partial,
                                                                         std::uint64_t communicator, int ranks,
                                                                         int root) {
  program::ProgramBuilder b;
  std::vector<program::SymbolicExtent> shape(partial.shape().begin(), partial.shape().end());
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue x, b.add_input(partial.dtype(), shape, "partial"));
  program::CollectiveSpec spec;
  spec.kind = root == kEveryRank ? program::CollectiveKind::kAllReduce : program::CollectiveKind::kReduce;
  spec.reduction = program::CollectiveReduction::kSum;
  spec.communicator = communicator;
  spec.ranks = ranks;
  spec.peer = root == kEveryRank ? 0 : root;
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue sum, b.emit_collective(spec, x));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, b.freeze(std::span<const program::ProgramValue>(&sum, 1)));
  return frozen.program;
}

// The problem a split contracts, independent of the label names: each
// operand's axes and the output as labels numbered by first appearance,
// with their extents, and the dtype. "ij,jk->ik" and "ab,bc->ac" agree;
// "ij,jk->ki" over the same shapes does not, although it plans the same
// order and split.
std::string canonical_problem(const einsum::Network& network) {
  std::vector<int> number(static_cast<std::size_t>(network.num_labels()), -1);
  int next = 0;
  std::string out;
  auto put = [&](std::span<const einsum::LabelId> labels) {
    for (const einsum::LabelId l : labels) {
      if (l == einsum::kBroadcastAxis) {
        out += " b";
        continue;
      }
      int& n = number[static_cast<std::size_t>(l)];
      if (n < 0) n = next++;
      out += fmt::format(" {}={}", n, network.extent(l));
    }
  };
  for (const einsum::NetworkOperand& operand : network.operands()) {
    out += " |";
    put(operand.axis_labels);
  }
  out += " ->";
  put(network.output());
  return out;
}

// "ab,bc->ac with [10, 20], [20, 5]": what a mismatch error quotes.
std::string described(const einsum::Network& network) {
  std::string out = network.to_string() + " with ";
  for (std::size_t i = 0; i < network.operands().size(); ++i) {
    Dims shape;
    for (const einsum::LabelId l : network.operands()[i].axis_labels)
      shape.push_back(l == einsum::kBroadcastAxis ? 1 : network.extent(l));
    out += (i > 0 ? ", " : "") + shape_to_string(shape);
  }
  return out;
}

Status same_split(const Communicator& comm, const einsum::WorkerSlicing& split, DType dtype,
                  std::string_view operand_dtypes) {
  // The problem, the dtype, the order and the split's description, each
  // hashed on every rank: the largest and the smallest hash of a part agree
  // only when all ranks hold the same one (one allreduce of max over
  // [-h, h] pairs). The first part that differs is named, with this rank's.
  const einsum::ContractionTree& tree = split.part(0).tree();
  const std::string problem = canonical_problem(tree.network());
  const std::string order = tree.order().to_string();
  const std::string slicing = split.explain();
  const std::string dtypes =
      operand_dtypes.empty() ? std::string(to_string(dtype)) : fmt::format("{} (operands {})", dtype, operand_dtypes);
  struct Part {
    std::string_view text;
    std::string name;
  };
  const Part parts[] = {
      {problem, fmt::format("problems (subscripts or shapes; this rank: {})", abbreviate(described(tree.network())))},
      {dtypes, fmt::format("dtypes ({} on this rank)", dtypes)},
      {order, fmt::format("contraction paths (this rank: {})", abbreviate(order))},
      {slicing, fmt::format("slicings (max_intermediate_bytes, or the planner; this rank: {})",
                            abbreviate(slicing.substr(0, slicing.find('\n'))))},
  };
  std::int64_t pairs[2 * std::size(parts)];
  for (std::size_t i = 0; i < std::size(parts); ++i) {
    const auto h = static_cast<std::int64_t>(hashing::hash_string(0, parts[i].text) >> 1);
    pairs[2 * i] = -h;
    pairs[2 * i + 1] = h;
  }
  TENFERRO_ASSIGN_OR_RETURN(Tensor both, Tensor::from_values<std::int64_t>(std::span<const std::int64_t>(pairs),
                                                                           {std::int64_t{std::size(pairs)}}));
  TENFERRO_TRY(allreduce(comm, both, ReduceOp::kMax));
  const auto* reduced = static_cast<const std::int64_t*>(both.data());
  for (std::size_t i = 0; i < std::size(parts); ++i) {
    if (-reduced[2 * i] != reduced[2 * i + 1]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                        "sliced einsum over ranks: expected every rank to contract the same problem with the same "
                        "plan, found different {}",
                        parts[i].name);
    }
  }
  return ok_status();
}

}  // namespace

Result<int> node_rank(const Communicator& comm) {
  TENFERRO_TRY(mpi_running("mpi node rank"));
  MPI_Comm node = MPI_COMM_NULL;
  TENFERRO_TRY(mpi_status(MPI_Comm_split_type(comm.comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                          "MPI_Comm_split_type"));
  int rank = 0;
  const Status ranked = mpi_status(MPI_Comm_rank(node, &rank), "MPI_Comm_rank");
  MPI_Comm_free(&node);
  TENFERRO_TRY(ranked);
  return rank;
}

Result<NodeCpuSharing> node_cpu_sharing(const Communicator& comm, const cpu::CpuSet& cpus) {
  TENFERRO_TRY(mpi_running("mpi node cpu sharing"));
  MPI_Comm node = MPI_COMM_NULL;
  TENFERRO_TRY(mpi_status(MPI_Comm_split_type(comm.comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                          "MPI_Comm_split_type"));
  NodeCpuSharing sharing;
  // Per CPU of the node, how many ranks' domains pin to it: one int per CPU
  // up to the largest any rank uses, summed over the node.
  int width = cpus.last() + 1;
  std::vector<int> users;
  const Status counted = [&]() -> Status {
    TENFERRO_TRY(mpi_status(MPI_Comm_rank(node, &sharing.node_rank), "MPI_Comm_rank"));
    TENFERRO_TRY(mpi_status(MPI_Comm_size(node, &sharing.node_ranks), "MPI_Comm_size"));
    TENFERRO_TRY(mpi_status(MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT, MPI_MAX, node), "MPI_Allreduce"));
    users.assign(static_cast<std::size_t>(std::max(width, 0)), 0);
    for (int c = cpus.first(); c >= 0; c = cpus.next(c)) users[static_cast<std::size_t>(c)] = 1;
    return mpi_status(MPI_Allreduce(MPI_IN_PLACE, users.data(), width, MPI_INT, MPI_SUM, node), "MPI_Allreduce");
  }();
  MPI_Comm_free(&node);
  TENFERRO_TRY(counted);
  for (const int u : users) {
    sharing.cpus += u > 0 ? 1 : 0;
    sharing.shared += u > 1 ? 1 : 0;
  }
  sharing.most_shared = sharing.shared;
  TENFERRO_TRY(
      mpi_status(MPI_Allreduce(MPI_IN_PLACE, &sharing.most_shared, 1, MPI_INT, MPI_MAX, comm.comm()), "MPI_Allreduce"));
  return sharing;
}

Status agree_on_split(const Communicator& comm, const Result<einsum::WorkerSlicing>& local, DType dtype,
                      std::string_view what, std::string_view operand_dtypes) {
  TENFERRO_TRY(agree(comm, local.status(), what));
  return same_split(comm, *local, dtype, operand_dtypes);
}

Status agree_on_split(const Communicator& comm, const einsum::WorkerSlicing& split, DType dtype, std::string_view what,
                      std::string_view operand_dtypes) {
  TENFERRO_TRY(agree(comm, ok_status(), what));
  return same_split(comm, split, dtype, operand_dtypes);
}

Result<runtime::Runtime> rank_runtime(std::shared_ptr<const Communicator> comm, std::uint64_t communicator) {
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder));
  builder.add_collective(collective_registration(std::move(comm), communicator));
  builder.config().policies().capacities.push_back(runtime::ResourceAmount{collective_lease_key(communicator), 1});
  return builder.build();
}

Status run_slices_over_ranks(const Communicator& comm, runtime::Runtime& runtime, std::uint64_t communicator,
                             const einsum::WorkerSliceExecutor& executor, std::span<const TensorView> inputs,
                             Tensor& output, const cpu::CpuResourceDomain& domain, einsum::SliceRunStats* stats,
                             int root) {
  // Note [Failure before the allreduce]: prepare, contract, agree, reduce.
  const runtime::BindingMode donate[] = {runtime::BindingMode::kDonatable};
  Tensor partial;
  std::shared_ptr<const runtime::PreparedProgram> prepared;
  Status local = [&]() -> Status {
    if (executor.worker() != comm.rank() || executor.split().workers() != comm.size()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "sliced einsum over ranks: expected worker {} of {} (this rank), found worker {} of {}",
                        comm.rank(), comm.size(), executor.worker(), executor.split().workers());
    }
    if (root < kEveryRank || root >= comm.size()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "sliced einsum over ranks: expected a root in [0, {}) or kEveryRank, found {}", comm.size(),
                        root);
    }
    if (!output.defined() || !output.is_host()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "sliced einsum over ranks: expected a host output tensor, found {}",
                        output.defined() ? output.to_string() : std::string("an undefined tensor"));
    }
    // The collective node reads a row-major dense operand.
    if (output.is_contiguous()) {
      partial = output;
    } else {
      TENFERRO_ASSIGN_OR_RETURN(partial, Tensor::empty(output.shape(), output.dtype()));
    }
    TENFERRO_ASSIGN_OR_RETURN(auto program, rank_sum_program(partial, communicator, comm.size(), root));
    TENFERRO_ASSIGN_OR_RETURN(
        prepared,
        runtime.prepare_for(program, runtime::InputSignature::of(std::span<const Tensor>(&partial, 1), donate)));
    const TensorView out = partial.view();
    return domain.enter([&](const cpu::CpuDomainSession& session) {
      const cpu::CpuExecutionContext context = session.context(cpu::ParallelMode::kInner);
      return executor.run(inputs, out, context.parallel(), stats);
    });
  }();
  TENFERRO_TRY(agree(comm, local));

  // For the partial to be donated, only the caller's `output` (when it is
  // the partial) and the reference we pass may hold its storage.
  if (partial.storage().get() == output.storage().get()) partial = Tensor();
  const Tensor& operand = partial.defined() ? partial : output;
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList sum,
                            runtime.run_prepared(*prepared, std::span<const Tensor>(&operand, 1)));
  if (sum[0].storage().get() == output.storage().get()) return ok_status();  // reduced in place
  if (!output.is_contiguous()) {
    output = std::move(sum[0]);  // rebound, as host_interop.h rebinds
    return ok_status();
  }
  // A contiguous output somebody else also holds: the sum lands in it.
  std::memcpy(output.data(), sum[0].data(), sum[0].nbytes());
  return ok_status();
}

}  // namespace tenferro::mpi
