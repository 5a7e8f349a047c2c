// CollectiveOp: spec validation, payload identity and metadata inference
// (Note [Collective operations]).
#include "tenferro/program/collective_op.h"

#include <fmt/format.h>

#include "tenferro/base/hash.h"

namespace tenferro::program {

std::string_view to_string(CollectiveKind kind) noexcept {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kRecv:
      return "recv";
    case CollectiveKind::kReduce:
      return "reduce";
  }
  return "?";
}

std::string_view to_string(CollectiveReduction reduction) noexcept {
  return reduction == CollectiveReduction::kSum ? "sum" : "max";
}

namespace {

bool reduces(CollectiveKind kind) noexcept {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kReduce;
}

bool has_peer(CollectiveKind kind) noexcept {
  return kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv ||
         kind == CollectiveKind::kReduce;
}

}  // namespace

std::string CollectiveSpec::to_string() const {
  std::string what;
  if (kind == CollectiveKind::kReduce) {
    what = fmt::format("({}, root {})", program::to_string(reduction), peer);
  } else if (reduces(kind)) {
    what = fmt::format("({})", program::to_string(reduction));
  } else if (kind == CollectiveKind::kBroadcast) {
    what = fmt::format("(root {})", peer);
  } else if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv) {
    what = fmt::format("({} {}, tag {})", kind == CollectiveKind::kSend ? "to" : "from", peer, tag);
  }
  return fmt::format("{}{} comm {} ranks {}", program::to_string(kind), what, communicator, ranks);
}

Result<std::shared_ptr<const CollectiveOp>> CollectiveOp::create(const CollectiveSpec& spec) {
  if (spec.ranks < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "collective {}: expected ranks >= 1, found {}",
                      program::to_string(spec.kind), spec.ranks);
  }
  if (has_peer(spec.kind) && (spec.peer < 0 || spec.peer >= spec.ranks)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "collective {}: expected a peer rank in [0, {}), found {}", program::to_string(spec.kind),
                      spec.ranks, spec.peer);
  }
  if (spec.tag < 0 || spec.tag > INT32_MAX) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "collective {}: expected a tag in [0, 2^31), found {}", program::to_string(spec.kind), spec.tag);
  }
  CollectiveSpec canonical = spec;
  // Fields a kind does not use do not distinguish programs.
  if (!reduces(canonical.kind)) canonical.reduction = CollectiveReduction::kSum;
  if (!has_peer(canonical.kind)) canonical.peer = 0;
  if (canonical.kind != CollectiveKind::kSend && canonical.kind != CollectiveKind::kRecv) canonical.tag = 0;
  return std::shared_ptr<const CollectiveOp>(new CollectiveOp(canonical));
}

std::uint64_t CollectiveOp::payload_hash() const noexcept {
  std::uint64_t h = hashing::hash_combine(0x636f6c6cULL, static_cast<std::uint64_t>(spec_.kind));
  h = hashing::hash_combine(h, static_cast<std::uint64_t>(spec_.reduction));
  h = hashing::hash_combine(h, spec_.communicator);
  h = hashing::hash_combine(h, static_cast<std::uint64_t>(spec_.ranks));
  h = hashing::hash_combine(h, static_cast<std::uint64_t>(spec_.peer));
  return hashing::hash_combine(h, static_cast<std::uint64_t>(spec_.tag));
}

bool CollectiveOp::payload_equal(const ExtensionOp& other) const noexcept {
  const CollectiveOp* o = as_collective(&other);
  return o != nullptr && o->spec_ == spec_;
}

Result<SmallVector<ValueMetadata, 2>> CollectiveOp::infer_metadata(std::span<const ValueMetadata> operands,
                                                                   ShapeConstraints& constraints) const {
  if (operands.size() != 1) {
    return constraints.error(ErrorCode::kInvalidArgument, "expected 1 operand, found {}", operands.size());
  }
  const ValueMetadata& x = operands[0];
  if (reduces(spec_.kind)) {
    const bool ok = spec_.reduction == CollectiveReduction::kSum ? x.dtype != DType::kBool
                                                                 : x.dtype != DType::kBool && !is_complex(x.dtype);
    if (!ok) {
      return constraints.error(ErrorCode::kInvalidArgument, "expected a dtype with a {} reduction, found {}",
                               program::to_string(spec_.reduction), x.dtype);
    }
  }
  ValueMetadata result = x;
  if (spec_.kind == CollectiveKind::kAllGather) {
    result.shape.clear();
    result.shape.push_back(SymbolicExtent::exact(spec_.ranks));
    for (const SymbolicExtent& e : x.shape) result.shape.push_back(e);
  } else if (spec_.kind == CollectiveKind::kReduceScatter) {
    if (x.rank() < 1) {
      return constraints.error(ErrorCode::kShapeMismatch, "expected an operand of shape [{}, ...], found {}",
                               spec_.ranks, x.to_string());
    }
    TENFERRO_TRY(constraints.require_equal(x.shape[0], SymbolicExtent::exact(spec_.ranks),
                                           "the leading extent (one block per rank)"));
    result.shape.clear();
    for (std::size_t i = 1; i < x.shape.size(); ++i) result.shape.push_back(x.shape[i]);
  }
  SmallVector<ValueMetadata, 2> out;
  out.push_back(std::move(result));
  return out;
}

EffectSet CollectiveOp::effects() const {
  return EffectSet{Effect{ResourceId{ResourceKind::kCommunicator, spec_.communicator}, EffectAccess::kReadWrite}};
}

SmallVector<AliasDecl, 2> CollectiveOp::aliases() const {
  SmallVector<AliasDecl, 2> out;
  out.push_back(AliasDecl::fresh());
  return out;
}

std::string CollectiveOp::describe() const { return fmt::format("{} {}", kFamilyId, spec_.to_string()); }

const CollectiveOp* as_collective(const ExtensionOp* op) noexcept { return dynamic_cast<const CollectiveOp*>(op); }

}  // namespace tenferro::program
