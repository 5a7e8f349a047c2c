// Binding subscripts to shapes (Note [Binding rules] in network.h): ellipsis
// expansion, dense label ids, extents with size-1 broadcasting, diagonals,
// and the implicit or explicit output.
#include "tenferro/einsum/network.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::einsum {

namespace {

// Where a label's extent was first fixed, for error messages.
struct ExtentSource {
  std::int32_t operand = -1;
  std::int32_t axis = -1;
};

}  // namespace

class NetworkBinder {
 public:
  NetworkBinder(const Subscripts& subscripts, std::span<const IntArrayRef> shapes)
      : subscripts_(subscripts), shapes_(shapes), text_(abbreviate(subscripts.to_string())) {}

  Result<Network> bind(std::span<const DType> dtypes) {
    const std::int32_t n = subscripts_.num_operands();
    if (shapes_.size() == dtypes.size() && shapes_.size() != static_cast<std::size_t>(n)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum \"{}\" names {} operand{}; found {} input{}", text_, n, n == 1 ? "" : "s",
                        shapes_.size(), shapes_.size() == 1 ? "" : "s");
    }
    if (shapes_.size() != static_cast<std::size_t>(n) || dtypes.size() != static_cast<std::size_t>(n)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum \"{}\" has {} operand{}; expected as many shapes and dtypes, found {} shapes and {} "
                        "dtypes",
                        text_, n, n == 1 ? "" : "s", shapes_.size(), dtypes.size());
    }
    for (std::int32_t i = 1; i < n; ++i) {
      if (dtypes[static_cast<std::size_t>(i)] != dtypes[0]) {
        return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                          "einsum \"{}\": operand {} has dtype {}, operand 0 has {}; expected one dtype for all "
                          "operands (promote before planning)",
                          text_, i, dtypes[static_cast<std::size_t>(i)], dtypes[0]);
      }
    }
    network_.dtype_ = dtypes[0];
    network_.notation_ = subscripts_.notation();
    network_.nesting_ = subscripts_.nesting();
    TENFERRO_TRY(assign_axis_labels());
    TENFERRO_TRY(resolve_extents());
    TENFERRO_TRY(bind_output());
    return std::move(network_);
  }

 private:
  // Gives every axis of every operand a label id (ellipsis labels included)
  // and checks ranks against the terms.
  Status assign_axis_labels() {
    const std::int32_t n = subscripts_.num_operands();
    for (std::int32_t i = 0; i < n; ++i) {
      const Term& term = subscripts_.operands()[static_cast<std::size_t>(i)];
      const auto rank = static_cast<std::int64_t>(shapes_[static_cast<std::size_t>(i)].size());
      const auto named = static_cast<std::int64_t>(term.labels.size());
      if (rank < named || (!term.has_ellipsis() && rank != named)) {
        std::string term_text;
        for (LabelKey key : term.labels) {
          if (!term_text.empty() && subscripts_.notation() == LabelNotation::kIntegers) term_text += ',';
          term_text += label_key_name(key, subscripts_.notation());
        }
        return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                          "einsum \"{}\": operand {} has rank {} but its subscripts \"{}\" name {} axes{}", text_, i,
                          rank, term_text, named, term.has_ellipsis() ? " besides \"...\"" : "");
      }
      ellipsis_rank_ = std::max(ellipsis_rank_, static_cast<std::int32_t>(rank - named));
    }
    ellipsis_ids_.assign(static_cast<std::size_t>(ellipsis_rank_), -1);
    for (std::int32_t i = 0; i < n; ++i) {
      const Term& term = subscripts_.operands()[static_cast<std::size_t>(i)];
      const auto rank = static_cast<std::int32_t>(shapes_[static_cast<std::size_t>(i)].size());
      const auto covered = rank - static_cast<std::int32_t>(term.labels.size());
      NetworkOperand operand;
      for (std::int32_t axis = 0; axis < rank; ++axis) {
        const std::int32_t e = term.has_ellipsis() ? axis - term.ellipsis_at : -1;
        if (term.has_ellipsis() && e >= 0 && e < covered) {
          operand.axis_labels.push_back(ellipsis_label(ellipsis_rank_ - covered + e));
        } else {
          const std::int32_t index = term.has_ellipsis() && e >= covered ? axis - covered : axis;
          operand.axis_labels.push_back(named_label(term.labels[static_cast<std::size_t>(index)]));
        }
      }
      network_.operands_.push_back(std::move(operand));
    }
    return ok_status();
  }

  LabelId named_label(LabelKey key) {
    auto [it, inserted] = named_ids_.try_emplace(key, network_.num_labels());
    if (inserted) network_.labels_.push_back(LabelInfo{.key = key, .ellipsis_dim = -1, .extent = -1});
    return it->second;
  }

  LabelId ellipsis_label(std::int32_t dim) {
    LabelId& id = ellipsis_ids_[static_cast<std::size_t>(dim)];
    if (id < 0) {
      id = network_.num_labels();
      network_.labels_.push_back(LabelInfo{.key = 0, .ellipsis_dim = dim, .extent = -1});
    }
    return id;
  }

  // One extent per label: equal, or 1 against anything (numpy broadcasting);
  // repeats within an operand must be equal. Then marks broadcast axes and
  // lists each operand's distinct labels.
  Status resolve_extents() {
    std::vector<ExtentSource> sources(network_.labels_.size());
    for (std::int32_t i = 0; i < network_.num_operands(); ++i) {
      const NetworkOperand& operand = network_.operands_[static_cast<std::size_t>(i)];
      const IntArrayRef shape = shapes_[static_cast<std::size_t>(i)];
      for (std::int32_t axis = 0; axis < static_cast<std::int32_t>(shape.size()); ++axis) {
        const std::int64_t size = shape[static_cast<std::size_t>(axis)];
        const LabelId label = operand.axis_labels[static_cast<std::size_t>(axis)];
        if (size < 0) {
          return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                            "einsum \"{}\": operand {} has negative extent {} at axis {} (label '{}')", text_, i, size,
                            axis, network_.label_name(label));
        }
        for (std::int32_t prior = 0; prior < axis; ++prior) {
          if (operand.axis_labels[static_cast<std::size_t>(prior)] == label &&
              shape[static_cast<std::size_t>(prior)] != size) {
            return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                              "einsum \"{}\": operand {} repeats label '{}' on axes {} and {} with extents {} and "
                              "{}; a repeated label takes a diagonal and needs equal extents",
                              text_, i, network_.label_name(label), prior, axis, shape[static_cast<std::size_t>(prior)],
                              size);
          }
        }
        LabelInfo& info = network_.labels_[static_cast<std::size_t>(label)];
        ExtentSource& source = sources[static_cast<std::size_t>(label)];
        if (info.extent < 0 || (info.extent == 1 && size != 1)) {
          info.extent = size;
          source = {i, axis};
        } else if (size != 1 && size != info.extent) {
          return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                            "einsum \"{}\": label '{}' has extent {} at operand {} axis {}, but extent {} at operand "
                            "{} axis {}; expected equal extents or 1",
                            text_, network_.label_name(label), size, i, axis, info.extent, source.operand, source.axis);
        }
      }
    }
    for (std::int32_t i = 0; i < network_.num_operands(); ++i) {
      NetworkOperand& operand = network_.operands_[static_cast<std::size_t>(i)];
      const IntArrayRef shape = shapes_[static_cast<std::size_t>(i)];
      for (std::size_t axis = 0; axis < operand.axis_labels.size(); ++axis) {
        const LabelId label = operand.axis_labels[axis];
        if (shape[axis] == 1 && network_.extent(label) != 1) {
          operand.axis_labels[axis] = kBroadcastAxis;
        } else if (std::find(operand.labels.begin(), operand.labels.end(), label) == operand.labels.end()) {
          operand.labels.push_back(label);
        }
      }
    }
    return ok_status();
  }

  Status bind_output() {
    const auto& output = subscripts_.explicit_output();
    if (output) {
      if (!output->has_ellipsis() && ellipsis_rank_ > 0) {
        return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                          "einsum \"{}\": \"...\" covers {} broadcast dimensions but the output has no \"...\"; "
                          "expected \"...\" in the output",
                          text_, ellipsis_rank_);
      }
      for (std::size_t i = 0; i <= output->labels.size(); ++i) {
        if (static_cast<std::int32_t>(i) == output->ellipsis_at) {
          for (LabelId id : ellipsis_ids_) network_.output_.push_back(id);
        }
        if (i < output->labels.size()) network_.output_.push_back(named_ids_.at(output->labels[i]));
      }
      return ok_status();
    }
    // numpy's implicit output: broadcast dimensions, then labels written
    // exactly once, sorted by key.
    for (LabelId id : ellipsis_ids_) network_.output_.push_back(id);
    std::unordered_map<LabelKey, std::int32_t> counts;
    for (const Term& term : subscripts_.operands())
      for (LabelKey key : term.labels) ++counts[key];
    std::vector<LabelKey> once;
    for (auto [key, count] : counts)
      if (count == 1) once.push_back(key);
    std::sort(once.begin(), once.end());
    for (LabelKey key : once) network_.output_.push_back(named_ids_.at(key));
    return ok_status();
  }

  const Subscripts& subscripts_;
  std::span<const IntArrayRef> shapes_;
  std::string text_;
  Network network_;
  std::unordered_map<LabelKey, LabelId> named_ids_;
  std::vector<LabelId> ellipsis_ids_;
  std::int32_t ellipsis_rank_ = 0;
};

// Note [Einsum binding errors are compile-stage]
// Subscripts that do not parse (Subscripts::parse) and operands that do not
// fit them (count, rank, extents, dtypes) are a semantic error of the
// einsum, found wherever it is first bound: by
// the op's shape inference in a traced program (ShapeConstraints, compile
// stage), by a plan's preparation (tf_einsum, CpuEinsumExecutor::prepare),
// by contract_path or by the CLI (EinsumOp::bind). One kind of failure
// carries one stage (docs/errors.md), so the parser and the binder stamp
// their errors `compile` themselves rather than leave each caller to pick
// one: they used to read `api`, `prepare` or `compile` depending on the
// binding. A binding that counts the operands itself before binding (the
// Python module) raises that error as `compile` too.
Result<Network> Network::bind(const Subscripts& subscripts, std::span<const IntArrayRef> shapes,
                              std::span<const DType> dtypes) {
  Result<Network> bound = NetworkBinder(subscripts, shapes).bind(dtypes);
  if (!bound.ok()) return bound.status().in_stage(ErrorStage::kCompile);
  return bound;
}

Result<Network> Network::bind(std::string_view subscripts, std::span<const IntArrayRef> shapes, DType dtype) {
  TENFERRO_ASSIGN_OR_RETURN(Subscripts parsed, Subscripts::parse(subscripts));  // compile-stage errors
  std::vector<DType> dtypes(shapes.size(), dtype);
  return bind(parsed, shapes, dtypes);
}

std::vector<std::int64_t> Network::output_shape() const {
  std::vector<std::int64_t> shape;
  shape.reserve(output_.size());
  for (LabelId label : output_) shape.push_back(extent(label));
  return shape;
}

std::string Network::label_name(LabelId label) const {
  if (label == kBroadcastAxis) return "1";
  const LabelInfo& info = labels_[static_cast<std::size_t>(label)];
  // An ellipsis label: its broadcast axis, 0 = leftmost.
  if (info.ellipsis_dim >= 0) return fmt::format("...[{}]", info.ellipsis_dim);
  return label_key_name(info.key, notation_);
}

std::string Network::labels_to_string(std::span<const LabelId> labels) const {
  const bool integers = notation_ == LabelNotation::kIntegers;
  std::string out = integers ? "[" : "";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (integers && i > 0) out += ',';
    out += label_name(labels[i]);
  }
  if (integers) out += ']';
  return out;
}

std::string Network::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < operands_.size(); ++i) {
    if (i > 0) out += ',';
    out += labels_to_string(operands_[i].labels);
  }
  out += "->";
  out += labels_to_string(output_);
  return out;
}

}  // namespace tenferro::einsum
