// Internal: the compact form of a Network that the path searches work on.
// Label sets are bit rows (one bit per label id) so unions, intersections
// and "who else needs this label" are a few word operations; sizes are
// log2 so large networks do not overflow. Only the planners use this file.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "tenferro/einsum/network.h"

namespace tenferro::einsum::internal {

using Word = std::uint64_t;

/// Equal-width label sets stored row after row in one buffer.
class LabelSets {
 public:
  LabelSets() = default;
  LabelSets(std::int32_t words, std::size_t rows) : words_(words), bits_(static_cast<std::size_t>(words) * rows, 0) {}

  std::int32_t words() const noexcept { return words_; }
  std::size_t rows() const noexcept { return words_ == 0 ? 0 : bits_.size() / static_cast<std::size_t>(words_); }
  Word* operator[](std::size_t row) noexcept { return bits_.data() + row * static_cast<std::size_t>(words_); }
  const Word* operator[](std::size_t row) const noexcept {
    return bits_.data() + row * static_cast<std::size_t>(words_);
  }

 private:
  std::int32_t words_ = 0;
  std::vector<Word> bits_;
};

inline bool has_label(const Word* set, LabelId label) noexcept { return (set[label >> 6] >> (label & 63)) & 1u; }
inline void add_label(Word* set, LabelId label) noexcept { set[label >> 6] |= Word{1} << (label & 63); }

/// Calls f(label) for every label in `set`, in increasing order.
template <class F>
inline void for_each_label(const Word* set, std::int32_t words, F&& f) {
  for (std::int32_t w = 0; w < words; ++w) {
    for (Word bits = set[w]; bits != 0; bits &= bits - 1) f(static_cast<LabelId>(w * 64 + std::countr_zero(bits)));
  }
}

/// The search view of a Network.
struct SearchNetwork {
  std::int32_t num_inputs = 0;
  std::int32_t num_labels = 0;
  std::int32_t words = 0;
  /// Per input, its labels after pre-summing (labels only it has and the
  /// output lacks are gone: every order sums them the same way).
  LabelSets inputs;
  /// One row: the output labels.
  LabelSets output;
  /// log2 of each label's extent, extents of 0 treated as 1 (any order of an
  /// empty network costs nothing; the tree reports exact costs).
  std::vector<double> log2_extent;
  /// Bytes per element of the network's dtype.
  double element_bytes = 8.0;

  static SearchNetwork from(const Network& network);

  /// log2 of the number of elements of a tensor holding `set`.
  double log2_size(const Word* set) const noexcept {
    double sum = 0.0;
    for_each_label(set, words, [&](LabelId label) { sum += log2_extent[static_cast<std::size_t>(label)]; });
    return sum;
  }
};

}  // namespace tenferro::einsum::internal
