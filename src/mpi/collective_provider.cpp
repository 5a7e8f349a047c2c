// The MPI collective provider of runtime Collective nodes (Note [MPI
// collective nodes] in collective_provider.h).
#include "tenferro/mpi/collective_provider.h"

#include <climits>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "mpi/checked.h"
#include "tenferro/mpi/collectives.h"
#include "tenferro/runtime/spi/collective.h"

namespace tenferro::mpi {

namespace {

using program::CollectiveKind;
using program::CollectiveSpec;

bool same_shape_result(CollectiveKind kind) noexcept {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kSend ||
         kind == CollectiveKind::kRecv || kind == CollectiveKind::kReduce;
}

ReduceOp reduce_op(const CollectiveSpec& spec) noexcept {
  return spec.reduction == program::CollectiveReduction::kSum ? ReduceOp::kSum : ReduceOp::kMax;
}

bool row_major(const TensorView& view) noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = view.shape.size(); i-- > 0;) {
    if (view.shape[i] != 1 && view.strides[i] != expected) return false;
    expected *= view.shape[i];
  }
  return true;
}

class MpiCollectives final : public runtime::CollectiveProvider {
 public:
  MpiCollectives(std::shared_ptr<const Communicator> comm, std::uint64_t communicator)
      : comm_(std::move(comm)), communicator_(communicator) {}

  std::string_view name() const noexcept override { return "mpi.collectives"; }

  Result<runtime::PrepareCapability> prepare(const runtime::CollectiveSignature& signature) const override {
    const CollectiveSpec& spec = signature.op->spec();
    if (spec.ranks != comm_->size()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                        "{}: expected a program for this communicator's {} ranks, found one for {}", spec.to_string(),
                        comm_->size(), spec.ranks);
    }
    const std::int64_t numel = numel_unchecked(signature.operand.shape);
    if (numel > INT_MAX) {
      return make_error(ErrorCode::kSizeOverflow, ErrorStage::kPrepare,
                        "{}: expected at most {} elements per rank, found {}", spec.to_string(), INT_MAX, numel);
    }
    runtime::PreparedKernel kernel;
    kernel.in_place_ok = same_shape_result(spec.kind);
    // MPI does not promise one reduction order across calls.
    kernel.reproducible = spec.kind != CollectiveKind::kAllReduce && spec.kind != CollectiveKind::kReduceScatter &&
                          spec.kind != CollectiveKind::kReduce;
    kernel.resources.push_back(runtime::ResourceAmount{collective_lease_key(communicator_), 1});
    return runtime::PrepareCapability::prepared(std::move(kernel));
  }

  Status run(const runtime::CollectiveRequest& request) const override {
    const CollectiveSpec& spec = request.op->spec();
    const std::string what = fmt::format("mpi {}", program::to_string(spec.kind));
    const TensorView& in = request.input;
    const TensorView& out = request.output;
    Status local;
    if (!row_major(in)) {
      local = make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                         "{}: expected a row-major dense operand, found strides that are not", what);
    }
    const MPI_Datatype type = internal::mpi_type(in.dtype);
    const auto n = static_cast<int>(in.numel());
    const bool in_place = in.data == out.data;
    const MPI_Comm c = comm_->comm();
    switch (spec.kind) {
      case CollectiveKind::kAllReduce:
        TENFERRO_TRY(internal::agree_on(*comm_, local, what, in.dtype, IntArrayRef(in.shape),
                                        static_cast<std::int64_t>(spec.reduction)));
        return mpi_status(
            MPI_Allreduce(in_place ? MPI_IN_PLACE : in.data, out.data, n, type, internal::mpi_op(reduce_op(spec)), c),
            "MPI_Allreduce");
      case CollectiveKind::kReduce: {
        TENFERRO_TRY(internal::agree_on(*comm_, local, what, in.dtype, IntArrayRef(in.shape),
                                        static_cast<std::int64_t>(spec.reduction), spec.peer));
        const auto root = static_cast<int>(spec.peer);
        const bool at_root = comm_->rank() == root;
        // Elsewhere the result is the operand, which MPI only reads.
        if (!at_root && !in_place) std::memcpy(out.data, in.data, nbytes(in));
        return mpi_status(MPI_Reduce(at_root && in_place ? MPI_IN_PLACE : in.data, at_root ? out.data : nullptr, n,
                                     type, internal::mpi_op(reduce_op(spec)), root, c),
                          "MPI_Reduce");
      }
      case CollectiveKind::kBroadcast:
        TENFERRO_TRY(internal::agree_on(*comm_, local, what, in.dtype, IntArrayRef(in.shape), 0, spec.peer));
        if (comm_->rank() == spec.peer && !in_place) std::memcpy(out.data, in.data, nbytes(in));
        return mpi_status(MPI_Bcast(out.data, n, type, static_cast<int>(spec.peer), c), "MPI_Bcast");
      case CollectiveKind::kAllGather:
        TENFERRO_TRY(internal::agree_on(*comm_, local, what, in.dtype, IntArrayRef(in.shape)));
        return mpi_status(MPI_Allgather(in.data, n, type, out.data, n, type, c), "MPI_Allgather");
      case CollectiveKind::kReduceScatter:
        TENFERRO_TRY(internal::agree_on(*comm_, local, what, in.dtype, IntArrayRef(in.shape),
                                        static_cast<std::int64_t>(spec.reduction)));
        return mpi_status(MPI_Reduce_scatter_block(in.data, out.data, static_cast<int>(out.numel()), type,
                                                   internal::mpi_op(reduce_op(spec)), c),
                          "MPI_Reduce_scatter_block");
      case CollectiveKind::kSend:
        if (local.ok() && !in_place) std::memcpy(out.data, in.data, nbytes(in));
        return internal::send_elements(*comm_, in.data, in.numel(), in.dtype, static_cast<int>(spec.peer),
                                       static_cast<int>(spec.tag), local);
      case CollectiveKind::kRecv:
        return internal::recv_elements(*comm_, out.data, out.numel(), out.dtype, static_cast<int>(spec.peer),
                                       static_cast<int>(spec.tag), Status());
    }
    return make_error(ErrorCode::kInternal, ErrorStage::kNone, "{}: unknown collective kind", what);
  }

  Status abandon(const program::CollectiveOp& op, const Status& failure) const override {
    const CollectiveSpec& spec = op.spec();
    const std::string what = fmt::format("mpi {}", program::to_string(spec.kind));
    switch (spec.kind) {
      case CollectiveKind::kSend:
        return internal::send_elements(*comm_, nullptr, 0, DType::kFloat64, static_cast<int>(spec.peer),
                                       static_cast<int>(spec.tag), failure);
      case CollectiveKind::kRecv:
        return internal::recv_elements(*comm_, nullptr, 0, DType::kFloat64, static_cast<int>(spec.peer),
                                       static_cast<int>(spec.tag), failure);
      default:
        return internal::agree_on(*comm_, failure, what);
    }
  }

 private:
  static std::size_t nbytes(const TensorView& view) noexcept {
    return static_cast<std::size_t>(view.numel()) * dtype_size(view.dtype);
  }

  std::shared_ptr<const Communicator> comm_;
  std::uint64_t communicator_;
};

}  // namespace

runtime::CollectiveRegistration collective_registration(std::shared_ptr<const Communicator> comm,
                                                        std::uint64_t communicator) {
  return runtime::CollectiveRegistration{communicator, std::make_shared<MpiCollectives>(std::move(comm), communicator)};
}

runtime::ResourceKey collective_lease_key(std::uint64_t communicator) noexcept {
  return runtime::ResourceKey{runtime::ResourceKind::kExclusive, communicator};
}

Result<std::shared_ptr<const runtime::PreparedProgram>> prepare_on_all_ranks(
    const Communicator& comm, runtime::Runtime& runtime, const std::shared_ptr<const program::SemanticProgram>& program,
    const runtime::InputSignature& signature, const runtime::PrepareOptions& options) {
  Result<std::shared_ptr<const runtime::PreparedProgram>> prepared = runtime.prepare_for(program, signature, options);
  TENFERRO_TRY(agree(comm, prepared.status()));
  return prepared;
}

}  // namespace tenferro::mpi
