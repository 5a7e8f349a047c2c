// Eager and graph entry points (einsum_call.h).
#include "tenferro/einsum/einsum_call.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

namespace tenferro::einsum {

namespace {

// Note [Broadcast operands]
// A broadcast view (a stride-0 axis, as numpy's broadcast_to makes) holds
// one value for every index of that axis. An einsum step whose GEMM cannot
// fuse such an axis copied the operand into a dense buffer of its logical
// size: einsum("ij,ij->", broadcast_to(row, (n, n)), broadcast_to(col, (n, n)))
// took 2 n^2 elements of memory (549 MiB at n = 6000) for operands of 2 n,
// and ran n^2 multiply-adds. The eager call therefore drops such an axis's
// label from its operand (the operand becomes the view with the axis
// removed) wherever that keeps the value:
// - the label has another occurrence of the same extent in another operand:
//   that occurrence ranges over it as before;
// - otherwise, when the label is not in the output: it was summed over n
//   equal terms, so the result is the contraction without it times n;
// - otherwise (only this operand and the output have it) the output
//   broadcasts along it, and the operand keeps it.
// A label repeated within the operand (a diagonal) stays. Subscripts with
// "..." or a nested order, and bool operands (whose sum is no product),
// are left as written. The rewritten op has the same operand count, so an
// explicit path still applies; the engine caches its plan like any other.
// Python's sliced einsum (max_intermediate_bytes=) runs its own contraction
// and applies the same rewrite through drop_broadcast_labels (einsum_call.h).

bool has_broadcast_axis(const Tensor& t) {
  for (std::size_t a = 0; a < t.shape().size(); ++a) {
    if (t.shape()[a] > 1 && t.strides()[a] == 0) return true;
  }
  return false;
}

// The output labels as written, or numpy's implicit rule: the labels that
// occur once in all operands, in ascending order.
std::vector<LabelKey> output_labels(const Subscripts& s) {
  if (s.explicit_output().has_value()) {
    const auto& labels = s.explicit_output()->labels;
    return {labels.begin(), labels.end()};
  }
  std::vector<LabelKey> all;
  for (const Term& t : s.operands()) all.insert(all.end(), t.labels.begin(), t.labels.end());
  std::sort(all.begin(), all.end());
  std::vector<LabelKey> once;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    if (j - i == 1) once.push_back(all[i]);
    i = j;
  }
  return once;
}

}  // namespace

Result<std::optional<BroadcastRewrite>> drop_broadcast_labels(const EinsumOp& op, std::span<const Tensor> inputs) {
  if (std::none_of(inputs.begin(), inputs.end(),
                   [](const Tensor& t) { return t.defined() && has_broadcast_axis(t); })) {
    return std::nullopt;
  }
  {
    // The op as written checks the shapes first, so that an error names the
    // caller's subscripts.
    Dims shape;
    SmallVector<IntArrayRef, 8> shapes;
    for (const Tensor& t : inputs) shapes.push_back(t.defined() ? IntArrayRef(t.shape()) : IntArrayRef());
    if (!op.output_shape(shapes, shape).ok()) return std::nullopt;
  }
  const Subscripts& s = op.subscripts();
  if (s.nesting().has_value() || static_cast<std::size_t>(s.num_operands()) != inputs.size()) return std::nullopt;
  if (s.explicit_output().has_value() && s.explicit_output()->has_ellipsis()) return std::nullopt;
  std::vector<std::vector<LabelKey>> labels;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Term& t = s.operands()[k];
    if (t.has_ellipsis() || !inputs[k].defined() || !inputs[k].is_host() || inputs[k].dtype() == DType::kBool ||
        static_cast<std::size_t>(inputs[k].rank()) != t.labels.size()) {
      return std::nullopt;  // left to the engine (which also reports what is wrong)
    }
    labels.emplace_back(t.labels.begin(), t.labels.end());
  }
  const std::vector<LabelKey> output = output_labels(s);
  BroadcastRewrite r;
  r.operands.assign(inputs.begin(), inputs.end());
  bool changed = false;
  for (std::size_t k = 0; k < r.operands.size(); ++k) {
    for (std::size_t a = labels[k].size(); a-- > 0;) {
      const Tensor& x = r.operands[k];
      const std::int64_t extent = x.shape()[a];
      if (extent <= 1 || x.strides()[a] != 0) continue;
      const LabelKey label = labels[k][a];
      if (std::count(labels[k].begin(), labels[k].end(), label) != 1) continue;
      bool elsewhere = false;
      for (std::size_t j = 0; j < labels.size() && !elsewhere; ++j) {
        if (j == k) continue;
        for (std::size_t p = 0; p < labels[j].size(); ++p) {
          if (labels[j][p] == label && r.operands[j].shape()[p] == extent) elsewhere = true;
        }
      }
      const bool in_output = std::find(output.begin(), output.end(), label) != output.end();
      if (!elsewhere && in_output) continue;
      TENFERRO_ASSIGN_OR_RETURN(Tensor one, x.slice(static_cast<std::int64_t>(a), 0, 1));
      TENFERRO_ASSIGN_OR_RETURN(r.operands[k], one.squeeze(static_cast<std::int64_t>(a)));
      labels[k].erase(labels[k].begin() + static_cast<std::ptrdiff_t>(a));
      if (!elsewhere) {
        r.scale *= static_cast<double>(extent);
        r.wrapped_scale *= static_cast<std::uint64_t>(extent);
      }
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  TENFERRO_ASSIGN_OR_RETURN(Subscripts rewritten,
                            Subscripts::from_sublists(labels, std::optional<std::vector<LabelKey>>(output)));
  TENFERRO_ASSIGN_OR_RETURN(r.op, EinsumOp::create(std::move(rewritten), op.policy()));
  return std::optional<BroadcastRewrite>(std::move(r));
}

void scale_by_dropped_extents(Tensor& out, const BroadcastRewrite& r) {
  visit_dtype(out.dtype(), [&]<class T>(T) {
    T* p = static_cast<T*>(out.data());
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      for (std::int64_t i = 0; i < out.numel(); ++i) {
        p[i] = static_cast<T>(static_cast<std::uint64_t>(p[i]) * r.wrapped_scale);
      }
    } else if constexpr (!std::is_same_v<T, bool>) {
      using Real = decltype(std::abs(T{}));
      const auto factor = static_cast<Real>(r.scale);
      for (std::int64_t i = 0; i < out.numel(); ++i) p[i] *= factor;
    }
  });
}

Result<Tensor> einsum(runtime::EagerContext& context, const std::shared_ptr<const EinsumOp>& op,
                      std::span<const Tensor> inputs) {
  // Note [Eager dtype promotion] (runtime/eager.h): operands of different
  // dtypes are converted to their common dtype first; the op itself (and a
  // program's einsum) takes one dtype.
  const auto mixed = std::adjacent_find(inputs.begin(), inputs.end(), [](const Tensor& x, const Tensor& y) {
    return x.defined() && y.defined() && x.dtype() != y.dtype();
  });
  if (mixed != inputs.end()) {
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList common, context.to_common_dtype(inputs));
    return einsum(context, op, std::span<const Tensor>(common.data(), common.size()));
  }
  if (op != nullptr) {  // Note [Broadcast operands]
    TENFERRO_ASSIGN_OR_RETURN(std::optional<BroadcastRewrite> r, drop_broadcast_labels(*op, inputs));
    if (r.has_value()) {
      TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, context.call(r->op, r->operands));
      if (r->scale != 1.0) {
        if (out[0].storage().get()->use_count() != 1 || !out[0].is_contiguous()) {
          TENFERRO_ASSIGN_OR_RETURN(out[0], context.copy(out[0]));
        }
        scale_by_dropped_extents(out[0], *r);
      }
      return std::move(out[0]);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, context.call(op, inputs));
  return std::move(out[0]);
}

Result<Tensor> einsum(runtime::EagerContext& context, std::string_view subscripts, std::span<const Tensor> inputs) {
  TENFERRO_ASSIGN_OR_RETURN(
      std::shared_ptr<const program::ExtensionOp> op,
      context.op_from_text(kEinsumFamilyId, subscripts, [&]() -> Result<std::shared_ptr<const program::ExtensionOp>> {
        TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const EinsumOp> made, EinsumOp::create(subscripts));
        return std::shared_ptr<const program::ExtensionOp>(std::move(made));
      }));
  return einsum(context, std::static_pointer_cast<const EinsumOp>(std::move(op)), inputs);
}

Result<program::ProgramValue> emit_einsum(program::ProgramBuilder& builder, const std::shared_ptr<const EinsumOp>& op,
                                          std::span<const program::ProgramValue> operands) {
  TENFERRO_ASSIGN_OR_RETURN(auto results, builder.emit_extension(op, operands));
  return results[0];
}

}  // namespace tenferro::einsum
