// Network: subscripts bound to concrete shapes and a dtype. Binding expands
// "...", resolves every label to a dense LabelId with one extent, applies
// numpy's size-1 broadcasting, and fixes the output labels. Planners and
// engines work on a Network only.
//
// Note [Binding rules]
// - Labels get dense ids 0..L-1 in order of first appearance over the
//   operands; the broadcast dimensions of "..." get their own ids (they are
//   "ellipsis labels", printed as "…0", "…1", ...).
// - "..." in an operand stands for the axes its named labels do not cover.
//   The broadcast rank E is the largest such count; an operand covering c
//   axes gets the last c of the E ellipsis labels (numpy right-alignment).
// - Every label has one extent. Occurrences in different operands must agree
//   or be 1 (numpy broadcasts size-1 axes for named labels as well as for
//   "..."). An axis of extent 1 whose label has a larger extent is a
//   broadcast axis: it carries kBroadcastAxis and is not part of the
//   operand's label set (an engine indexes it at 0). Repeated labels within
//   one operand must have equal extents.
// - The output is the explicit output term (its "..." expands to all E
//   ellipsis labels; an explicit output without "..." is an error when
//   E > 0) or numpy's implicit output (Note [Einsum notation]).
// - All operands must have the same dtype (promote before planning).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::einsum {

/// A dense label id, 0..num_labels-1.
using LabelId = std::int32_t;
/// A short list of label ids (inline up to 8, the common rank).
using LabelList = SmallVector<LabelId, 8>;
/// axis_labels entry of an axis of extent 1 that broadcasts (Note [Binding rules]).
inline constexpr LabelId kBroadcastAxis = -1;

/// What a dense label stands for.
struct LabelInfo {
  /// The key as written, for named labels.
  LabelKey key = 0;
  /// For ellipsis labels: the broadcast dimension, 0 = leftmost; -1 otherwise.
  std::int32_t ellipsis_dim = -1;
  /// The label's extent (after size-1 broadcasting).
  std::int64_t extent = 1;
};

/// One bound operand.
struct NetworkOperand {
  /// One entry per axis of the operand as given: its label id, repeated for
  /// diagonal axes, or kBroadcastAxis for a broadcast axis of extent 1.
  LabelList axis_labels;
  /// The distinct labels (broadcast axes dropped) in order of first
  /// occurrence: the operand's labels after taking diagonals.
  LabelList labels;
};

/// Subscripts bound to shapes and a dtype (Note [Binding rules]). Immutable
/// value type; thread-compatible.
class Network {
 public:
  /// Binds `subscripts` to one shape and one dtype per operand. Errors name
  /// the operand, axis and label: kInvalidArgument for a wrong operand count
  /// or negative extent, kShapeMismatch for a label/rank mismatch,
  /// inconsistent extents or a missing output "...", kDTypeMismatch for
  /// differing dtypes; every error is compile-stage (Note [Einsum binding
  /// errors are compile-stage] in network.cpp).
  static Result<Network> bind(const Subscripts& subscripts, std::span<const IntArrayRef> shapes,
                              std::span<const DType> dtypes);
  /// Convenience: parses `subscripts` and binds them, all operands of `dtype`.
  static Result<Network> bind(std::string_view subscripts, std::span<const IntArrayRef> shapes,
                              DType dtype = DType::kFloat64);

  std::int32_t num_operands() const noexcept { return static_cast<std::int32_t>(operands_.size()); }
  std::int32_t num_labels() const noexcept { return static_cast<std::int32_t>(labels_.size()); }
  std::span<const NetworkOperand> operands() const noexcept { return operands_; }
  const NetworkOperand& operand(std::int32_t i) const noexcept { return operands_[static_cast<std::size_t>(i)]; }
  std::span<const LabelInfo> labels() const noexcept { return labels_; }
  std::int64_t extent(LabelId label) const noexcept { return labels_[static_cast<std::size_t>(label)].extent; }
  /// The output labels in output axis order.
  const LabelList& output() const noexcept { return output_; }
  /// The output shape, one extent per output label.
  std::vector<std::int64_t> output_shape() const;
  DType dtype() const noexcept { return dtype_; }
  /// The order written with parentheses in the subscripts, or nullopt.
  const std::optional<ContractionOrder>& nesting() const noexcept { return nesting_; }
  LabelNotation notation() const noexcept { return notation_; }

  /// The label as a user wrote it ("j", "Ж", "7") or "…k" for ellipsis dim k.
  std::string label_name(LabelId label) const;
  /// Names of `labels` joined, e.g. "ijk" (characters) or "[0,1,2]" (integers).
  std::string labels_to_string(std::span<const LabelId> labels) const;
  /// The bound problem in subscript form with unique labels per operand
  /// (diagonals and broadcast axes resolved), e.g. "ij,jk->ik".
  std::string to_string() const;

 private:
  friend class NetworkBinder;
  std::vector<NetworkOperand> operands_;
  std::vector<LabelInfo> labels_;
  LabelList output_;
  DType dtype_ = DType::kFloat64;
  std::optional<ContractionOrder> nesting_;
  LabelNotation notation_ = LabelNotation::kCharacters;
};

}  // namespace tenferro::einsum
