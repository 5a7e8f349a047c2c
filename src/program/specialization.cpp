// SpecializationRequirements (Note [Specialization widening]).
#include "tenferro/program/specialization.h"

namespace tenferro::program {

std::string_view to_string(SpecializationAxis axis) noexcept {
  switch (axis) {
    case SpecializationAxis::kConcreteDims:
      return "concrete_dims";
    case SpecializationAxis::kDType:
      return "dtype";
    case SpecializationAxis::kPlacement:
      return "placement";
    case SpecializationAxis::kLayoutClass:
      return "layout_class";
    case SpecializationAxis::kExactStrides:
      return "exact_strides";
    case SpecializationAxis::kAlignment:
      return "alignment";
  }
  return "?";
}

std::string SpecializationRequirements::to_string() const {
  if (none()) return "none";
  std::string out;
  for (int i = 0; i < kNumSpecializationAxes; ++i) {
    auto axis = static_cast<SpecializationAxis>(i);
    if (!has(axis)) continue;
    if (!out.empty()) out += "|";
    out += program::to_string(axis);
  }
  return out;
}

Status SpecializationRequirements::check_widens(SpecializationRequirements granted, std::string_view requester) const {
  if (strictly_widens(granted)) return ok_status();
  return make_error(ErrorCode::kProviderContractError, ErrorStage::kPrepare,
                    "{} asked for specialization {} with {} already granted; a request must strictly widen what was "
                    "granted (repeating or narrowing it cannot terminate)",
                    requester, to_string(), granted.to_string());
}

}  // namespace tenferro::program
