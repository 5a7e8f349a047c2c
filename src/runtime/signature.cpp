// InputSignature and PrepareOptions hashing, layout classes, core-op family
// membership and small to_string helpers.
#include "tenferro/runtime/signature.h"

#include <fmt/format.h>

#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::runtime {
namespace {

inline void mix(std::uint64_t& h, std::uint64_t v) noexcept { h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); }

}  // namespace

OpFamily core_op_family(program::CoreSemanticOp op) noexcept {
  using program::CoreOpFamily;
  const program::CoreOpInfo& info = program::core_op_info(op);
  switch (info.family) {
    case CoreOpFamily::kElementwise:
    case CoreOpFamily::kCreation:  // fills are served by the elementwise slot
      return OpFamily::kElementwise;
    case CoreOpFamily::kDataMovement:
      return info.movement == program::MovementClass::kView ? OpFamily::kView : OpFamily::kIndexing;
    case CoreOpFamily::kReduction:
    case CoreOpFamily::kAlongAxis:  // lane-wise ops live with the reductions' providers
      return OpFamily::kReduction;
    case CoreOpFamily::kContraction:
      return OpFamily::kDotGeneral;
  }
  return OpFamily::kElementwise;
}

std::string_view to_string(LayoutClass layout) noexcept {
  switch (layout) {
    case LayoutClass::kRowMajor:
      return "row_major";
    case LayoutClass::kDense:
      return "dense";
    case LayoutClass::kStrided:
      return "strided";
  }
  return "unknown";
}

std::string_view to_string(ScheduledNodeKind kind) noexcept {
  switch (kind) {
    case ScheduledNodeKind::kOperation:
      return "operation";
    case ScheduledNodeKind::kExtension:
      return "extension";
    case ScheduledNodeKind::kView:
      return "view";
    case ScheduledNodeKind::kCopy:
      return "copy";
    case ScheduledNodeKind::kTransfer:
      return "transfer";
    case ScheduledNodeKind::kBarrier:
      return "barrier";
    case ScheduledNodeKind::kCollective:
      return "collective";
  }
  return "unknown";
}

bool is_row_major_dense(const TensorView& view) noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = view.shape.size(); i-- > 0;) {
    if (view.shape[i] != 1 && view.strides[i] != expected) return false;
    expected *= view.shape[i];
  }
  return true;
}

LayoutClass layout_class_of(const Tensor& tensor) noexcept {
  if (tensor.is_contiguous()) return LayoutClass::kRowMajor;
  if (tensor.is_non_overlapping_and_dense()) return LayoutClass::kDense;
  return LayoutClass::kStrided;
}

InputSignature InputSignature::of(std::span<const Tensor> inputs, std::span<const BindingMode> bindings) {
  InputSignature sig;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    InputDescriptor d;
    if (t.defined()) {
      d.dtype = t.dtype();
      d.shape = Dims(t.shape());
      d.layout = layout_class_of(t);
      d.storage = t.storage()->storage_domain();
      d.affinity = t.storage()->affinity();
    } else {
      d.defined = false;
    }
    if (i < bindings.size()) d.binding = bindings[i];
    sig.inputs_.push_back(std::move(d));
  }
  return sig;
}

std::uint64_t InputSignature::hash() const noexcept {
  std::uint64_t h = inputs_.size();
  for (const InputDescriptor& d : inputs_) {
    mix(h, static_cast<std::uint64_t>(d.dtype));
    mix(h, d.shape.size());
    for (std::int64_t e : d.shape) mix(h, static_cast<std::uint64_t>(e));
    mix(h, static_cast<std::uint64_t>(d.layout));
    mix(h, d.storage.value());
    mix(h, static_cast<std::uint64_t>(d.affinity.kind()));
    mix(h, static_cast<std::uint64_t>(d.binding));
  }
  return h;
}

std::string InputSignature::to_string() const {
  std::string out = "(";
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const InputDescriptor& d = inputs_[i];
    if (i > 0) out += ", ";
    out += fmt::format("{}{} {}", d.dtype, shape_to_string(d.shape), runtime::to_string(d.layout));
    if (d.storage != kHostStorageDomain) out += fmt::format(" storage {}", d.storage);
    if (d.affinity.has_cpu_domain()) out += fmt::format(" cpu domain {}", d.affinity.cpu_domain_id());
    if (d.binding == BindingMode::kDonatable) out += " donatable";
  }
  return out + ")";
}

std::uint64_t PrepareOptions::hash() const noexcept {
  std::uint64_t h = determinism ? 1 + static_cast<std::uint64_t>(*determinism) : 0;
  mix(h, static_cast<std::uint64_t>(placement.kind()));
  mix(h, placement.engine_id().value());
  mix(h, placement.kind() == Placement::Kind::kCpuDomain ? placement.cpu_domain_id().value()
         : placement.kind() == Placement::Kind::kDevice  ? placement.device_id().value()
                                                         : 0);
  for (const OperationOverride& o : overrides) {
    mix(h, o.operation.index());
    mix(h, o.engine.value());
  }
  mix(h, workspace_limit_bytes ? *workspace_limit_bytes + 1 : 0);
  return h;
}

}  // namespace tenferro::runtime
