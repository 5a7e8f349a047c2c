// SpecializationRequirements: the finite, typed projection of a concrete input
// signature that a lowering or provider may ask for. The program component
// defines it because an ExtensionOp's lower_to_core answers with it, and the
// program may not depend on the runtime.
//
// Note [Specialization widening]
// Preparation starts polymorphic (nothing granted). A lowering or provider
// that needs more answers NeedsSpecialization(R); the runtime grants R and
// retries. R must *strictly widen* what was granted (a strict superset):
// repeating or narrowing a request is a ProviderContractError. Because the
// set of axes is finite and every answer adds at least one, preparation
// terminates after at most kNumSpecializationAxes retries. Tensor values,
// pointers, free memory and scheduler load are never part of it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tenferro/base/status.h"

namespace tenferro::program {

/// One thing a specialization may fix.
enum class SpecializationAxis : std::uint8_t {
  kConcreteDims,  ///< every extent exact
  kDType,         ///< element types (always static in the IR today)
  kPlacement,     ///< the resolved engine / memory placement
  kLayoutClass,   ///< contiguous / permuted-dense / strided
  kExactStrides,  ///< the exact strides of every operand
  kAlignment,     ///< the alignment of every operand's data pointer
};
inline constexpr int kNumSpecializationAxes = 6;
std::string_view to_string(SpecializationAxis axis) noexcept;

/// A set of SpecializationAxis values. Trivial value type; thread-safe.
class SpecializationRequirements {
 public:
  /// Nothing fixed: a polymorphic preparation.
  constexpr SpecializationRequirements() noexcept = default;
  constexpr SpecializationRequirements(std::initializer_list<SpecializationAxis> axes) noexcept {
    for (SpecializationAxis axis : axes) bits_ |= bit(axis);
  }

  constexpr bool none() const noexcept { return bits_ == 0; }
  constexpr bool has(SpecializationAxis axis) const noexcept { return (bits_ & bit(axis)) != 0; }
  constexpr SpecializationRequirements with(SpecializationAxis axis) const noexcept {
    SpecializationRequirements r = *this;
    r.bits_ |= bit(axis);
    return r;
  }
  /// Union.
  constexpr SpecializationRequirements with(SpecializationRequirements other) const noexcept {
    SpecializationRequirements r = *this;
    r.bits_ |= other.bits_;
    return r;
  }
  /// Every axis of `other` is in *this.
  constexpr bool contains(SpecializationRequirements other) const noexcept {
    return (bits_ & other.bits_) == other.bits_;
  }
  /// A strict superset of `granted` (Note [Specialization widening]).
  constexpr bool strictly_widens(SpecializationRequirements granted) const noexcept {
    return contains(granted) && bits_ != granted.bits_;
  }
  /// ok when *this strictly widens `granted`; otherwise kProviderContractError
  /// (stage kPrepare) naming `requester`.
  Status check_widens(SpecializationRequirements granted, std::string_view requester) const;

  constexpr std::uint32_t bits() const noexcept { return bits_; }
  /// "none" or "concrete_dims|exact_strides".
  std::string to_string() const;

  friend constexpr bool operator==(SpecializationRequirements, SpecializationRequirements) noexcept = default;

 private:
  static constexpr std::uint32_t bit(SpecializationAxis axis) noexcept {
    return std::uint32_t{1} << static_cast<unsigned>(axis);
  }
  std::uint32_t bits_ = 0;
};

}  // namespace tenferro::program
