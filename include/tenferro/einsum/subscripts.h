// Subscripts: the parsed, shape-independent form of an einsum specification,
// from a numpy-style string or from integer sublists.
//
// Note [Einsum notation]
// String notation (UTF-8), numpy-compatible plus two extensions:
//   subscripts := operands [ "->" term ]
//   operands   := item { "," item }
//   item       := term | "(" item "," item { "," item } ")"
//   term       := { label | "..." }          (at most one "..." per term)
// - A label is an ASCII letter or digit, or any non-ASCII Unicode scalar
//   value except the C1 controls (the instance files use digits and Latin-1,
//   Greek and Cyrillic letters; numpy accepts letters only). We carry no
//   Unicode letter tables, so a non-ASCII symbol is accepted as a label too.
//   ASCII punctuation other than the syntax above is an error; ASCII spaces
//   and tabs are ignored everywhere.
// - Without "->" the output is implicit (numpy): the broadcast ("...")
//   dimensions, then every label that occurs exactly once, sorted by code
//   point (uppercase ASCII before lowercase, as in numpy).
// - A label repeated within one operand takes the diagonal ("ii->i") or,
//   when absent from the output, the trace ("ii"); three or more repeats
//   work the same way. A label in one operand only that is not in the output
//   is summed out.
// - Parentheses are the nested contraction-order extension: each
//   parenthesised group contracts its items left to right into one
//   intermediate, and when any parentheses are present the top-level items
//   are contracted left to right as well, so "((ij,jk),kl)->il" and
//   "(ij,jk),kl->il" both mean: ij with jk first, then the result with kl.
//   Operands are numbered in textual order. Groups need two or more items.
//   Only the kNested (or kAuto) planner accepts nested subscripts.
// Sublist notation (numpy's einsum(op0, sublist0, op1, sublist1, ...,
// [sublist_out])) uses non-negative integers as labels and kEllipsisKey for
// "..."; its implicit output sorts labels numerically.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/einsum/contraction_order.h"

namespace tenferro::einsum {

/// A label as written: a Unicode code point (string notation) or a
/// non-negative integer (sublist notation).
using LabelKey = std::int64_t;
/// Stands for "..." inside a sublist.
inline constexpr LabelKey kEllipsisKey = -1;

/// How the labels of a Subscripts were written.
enum class LabelNotation : std::uint8_t {
  kCharacters,  ///< keys are Unicode code points
  kIntegers,    ///< keys are the integers of sublist notation
};

/// One operand's or the output's subscripts as written.
struct Term {
  /// Labels in axis order, the ellipsis excluded.
  SmallVector<LabelKey, 8> labels;
  /// Index into `labels` before which "..." stands; -1 when there is none.
  std::int32_t ellipsis_at = -1;

  bool has_ellipsis() const noexcept { return ellipsis_at >= 0; }
  friend bool operator==(const Term&, const Term&) = default;
};

/// Parsed subscripts: the operand terms, the output term (explicit or
/// implicit) and an optional nested contraction order. Structural checks
/// that need no shapes happen here (syntax, duplicate output labels, output
/// labels that no operand has). Immutable value type; thread-compatible.
class Subscripts {
 public:
  /// Parses string notation (Note [Einsum notation]). Errors are
  /// kInvalidArgument and name the operand (or output) and the offending
  /// character or label with its byte offset.
  static Result<Subscripts> parse(std::string_view text);
  /// Sublist notation: one label list per operand (kEllipsisKey for "...")
  /// and an optional output list (nullopt: implicit output).
  static Result<Subscripts> from_sublists(std::span<const std::vector<LabelKey>> operands,
                                          const std::optional<std::vector<LabelKey>>& output);

  std::int32_t num_operands() const noexcept { return static_cast<std::int32_t>(operands_.size()); }
  std::span<const Term> operands() const noexcept { return operands_; }
  /// The output as written, or nullopt when implicit.
  const std::optional<Term>& explicit_output() const noexcept { return output_; }
  /// The contraction order written with parentheses, or nullopt.
  const std::optional<ContractionOrder>& nesting() const noexcept { return nesting_; }
  LabelNotation notation() const noexcept { return notation_; }

  /// The label as a user would write it: its UTF-8 character or its integer.
  std::string label_name(LabelKey key) const;
  /// Canonical text, e.g. "ij,jk->ik", "((ij,jk),kl)->il", or
  /// "[0,1],[1,2]->[0,2]" for sublists.
  std::string to_string() const;

 private:
  friend class SubscriptsParser;
  std::vector<Term> operands_;
  std::optional<Term> output_;
  std::optional<ContractionOrder> nesting_;
  LabelNotation notation_ = LabelNotation::kCharacters;
};

/// The label text of `key` in `notation` (UTF-8 character or integer).
std::string label_key_name(LabelKey key, LabelNotation notation);

}  // namespace tenferro::einsum
