// ContractionOrder: validation of SSA orders, translation from and to
// opt_einsum's pairwise path format, printing.
#include "tenferro/einsum/contraction_order.h"

#include <algorithm>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"

namespace tenferro::einsum {

Result<ContractionOrder> ContractionOrder::from_ssa(std::int32_t num_inputs, std::span<const Step> steps) {
  if (num_inputs < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction order over {} inputs; expected at least one input", num_inputs);
  }
  const auto expected_steps = static_cast<std::size_t>(num_inputs - 1);
  if (steps.size() != expected_steps) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction order over {} inputs has {} steps; expected {} (a complete binary tree)", num_inputs,
                      steps.size(), expected_steps);
  }
  std::vector<bool> consumed(static_cast<std::size_t>(2 * num_inputs - 1), false);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto available = static_cast<std::int32_t>(num_inputs + static_cast<std::int32_t>(k));
    for (std::int32_t node : {steps[k].first, steps[k].second}) {
      if (node < 0 || node >= available) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "contraction order step {} uses node {}; expected a node id in [0, {}) (inputs 0..{}, "
                          "then one node per earlier step)",
                          k, node, available, num_inputs - 1);
      }
      if (consumed[static_cast<std::size_t>(node)]) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "contraction order step {} uses node {}, which an earlier step already consumed", k, node);
      }
    }
    if (steps[k].first == steps[k].second) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "contraction order step {} contracts node {} with itself; expected two different nodes", k,
                        steps[k].first);
    }
    consumed[static_cast<std::size_t>(steps[k].first)] = true;
    consumed[static_cast<std::size_t>(steps[k].second)] = true;
  }
  return ContractionOrder(num_inputs, std::vector<Step>(steps.begin(), steps.end()));
}

Result<ContractionOrder> ContractionOrder::from_opt_einsum_path(
    std::int32_t num_inputs, std::span<const std::pair<std::int64_t, std::int64_t>> path) {
  if (num_inputs < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "opt_einsum path over {} inputs; expected at least one input", num_inputs);
  }
  if (path.size() != static_cast<std::size_t>(num_inputs - 1)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction path over {} inputs has {} pairwise steps; expected {} (one per contraction, "
                      "ending with one result)",
                      num_inputs, path.size(), num_inputs - 1);
  }
  // The operand list holds SSA node ids; each pair removes two positions
  // and appends the new node.
  std::vector<std::int32_t> operands(static_cast<std::size_t>(num_inputs));
  for (std::int32_t i = 0; i < num_inputs; ++i) operands[static_cast<std::size_t>(i)] = i;
  std::vector<Step> steps;
  steps.reserve(path.size());
  for (std::size_t k = 0; k < path.size(); ++k) {
    const auto [i, j] = path[k];
    const auto size = static_cast<std::int64_t>(operands.size());
    if (i < 0 || j < 0 || i >= size || j >= size || i == j) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "opt_einsum path pair {} is ({}, {}); expected two different positions in [0, {})", k, i, j,
                        size);
    }
    steps.emplace_back(operands[static_cast<std::size_t>(i)], operands[static_cast<std::size_t>(j)]);
    operands.erase(operands.begin() + std::max(i, j));
    operands.erase(operands.begin() + std::min(i, j));
    operands.push_back(num_inputs + static_cast<std::int32_t>(k));
  }
  return from_ssa(num_inputs, steps);
}

namespace {

// Recursive descent over node := integer | "(" node "," node ")".
class OrderParser {
 public:
  OrderParser(std::int32_t num_inputs, std::string_view text)
      : num_inputs_(num_inputs),
        text_(text),
        shown_(abbreviate(text)),
        seen_(static_cast<std::size_t>(std::max(num_inputs, 0)), false) {}

  Result<ContractionOrder> parse() {
    std::int32_t root = 0;
    TENFERRO_TRY(node(root, 0));
    skip_spaces();
    if (pos_ != text_.size()) return fail("the end of the order");
    for (std::int32_t i = 0; i < num_inputs_; ++i) {
      if (!seen_[static_cast<std::size_t>(i)]) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "contraction order \"{}\" never uses input {}; expected every input 0..{} once", shown_, i,
                          num_inputs_ - 1);
      }
    }
    return ContractionOrder::from_ssa(num_inputs_, steps_);
  }

 private:
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  Status fail(std::string_view expected) const {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction order \"{}\": expected {} at byte {}", shown_, expected, pos_);
  }

  Status node(std::int32_t& id, int depth) {
    skip_spaces();
    if (depth > 4 * num_inputs_ + 8) return fail("less nesting");
    if (pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      std::int32_t lhs = 0, rhs = 0;
      TENFERRO_TRY(node(lhs, depth + 1));
      skip_spaces();
      if (pos_ >= text_.size() || text_[pos_] != ',') return fail("','");
      ++pos_;
      TENFERRO_TRY(node(rhs, depth + 1));
      skip_spaces();
      if (pos_ >= text_.size() || text_[pos_] != ')') return fail("')'");
      ++pos_;
      steps_.emplace_back(lhs, rhs);
      id = num_inputs_ + static_cast<std::int32_t>(steps_.size()) - 1;
      return ok_status();
    }
    const std::size_t start = pos_;
    std::int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9' && value <= num_inputs_) {
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) return fail("an input index or '('");
    if (value >= num_inputs_) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "contraction order \"{}\": input {} at byte {} is out of range; expected 0..{}", shown_,
                        text_.substr(start, pos_ - start), start, num_inputs_ - 1);
    }
    if (seen_[static_cast<std::size_t>(value)]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "contraction order \"{}\": input {} appears twice (byte {})", shown_, value, start);
    }
    seen_[static_cast<std::size_t>(value)] = true;
    id = static_cast<std::int32_t>(value);
    return ok_status();
  }

  std::int32_t num_inputs_;
  std::string_view text_;
  std::string shown_;  // text_ as quoted in messages
  std::size_t pos_ = 0;
  std::vector<bool> seen_;
  std::vector<ContractionOrder::Step> steps_;
};

}  // namespace

Result<ContractionOrder> ContractionOrder::parse(std::int32_t num_inputs, std::string_view text) {
  if (num_inputs < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction order over {} inputs; expected at least one input", num_inputs);
  }
  return OrderParser(num_inputs, text).parse();
}

ContractionOrder ContractionOrder::left_to_right(std::int32_t num_inputs) {
  std::vector<Step> steps;
  for (std::int32_t k = 0; k + 1 < num_inputs; ++k) steps.emplace_back(k == 0 ? 0 : num_inputs + k - 1, k + 1);
  return ContractionOrder(std::max(num_inputs, 1), std::move(steps));
}

std::vector<std::pair<std::int64_t, std::int64_t>> ContractionOrder::to_opt_einsum_path() const {
  std::vector<std::int32_t> operands(static_cast<std::size_t>(num_inputs_));
  for (std::int32_t i = 0; i < num_inputs_; ++i) operands[static_cast<std::size_t>(i)] = i;
  std::vector<std::pair<std::int64_t, std::int64_t>> path;
  path.reserve(steps_.size());
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const auto position = [&](std::int32_t node) {
      return static_cast<std::int64_t>(std::find(operands.begin(), operands.end(), node) - operands.begin());
    };
    std::int64_t i = position(steps_[k].first);
    std::int64_t j = position(steps_[k].second);
    if (i > j) std::swap(i, j);
    path.emplace_back(i, j);
    operands.erase(operands.begin() + j);
    operands.erase(operands.begin() + i);
    operands.push_back(num_inputs_ + static_cast<std::int32_t>(k));
  }
  return path;
}

std::string ContractionOrder::to_string() const {
  std::vector<std::string> nodes;
  nodes.reserve(static_cast<std::size_t>(num_inputs_) + steps_.size());
  for (std::int32_t i = 0; i < num_inputs_; ++i) nodes.push_back(fmt::format("{}", i));
  for (auto [a, b] : steps_) {
    nodes.push_back(fmt::format("({},{})", nodes[static_cast<std::size_t>(a)], nodes[static_cast<std::size_t>(b)]));
  }
  return nodes.back();
}

}  // namespace tenferro::einsum
