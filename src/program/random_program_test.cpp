// Randomized property tests over generated programs:
//  - the builder's inferred shapes equal an independent reference;
//  - any topological emission order freezes to the same fingerprint and an
//    equal program; import and an identity transform reproduce it;
//  - changing one operation changes the fingerprint;
//  - the symbolic build's guards accept exactly the concrete input shapes
//    for which the concrete build succeeds, with the same result shapes.
#include <algorithm>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "tenferro/program/program_builder.h"
#include "tenferro/program/semantic_transform.h"

namespace tenferro::program {
namespace {

struct Node {
  CoreSemanticOp op;
  std::vector<int> operands;  // value ids: inputs first, then nodes
  CoreAttributes attributes;
};

struct RandomProgram {
  std::vector<Dims> input_shapes;
  std::vector<Node> nodes;
  std::vector<Dims> shapes;  // reference shape of every value
  std::vector<int> outputs;
};

int pick(std::mt19937& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

// A random valid program of `n_nodes` core ops over float64 values, with
// shapes computed by this independent reference.
RandomProgram generate(std::mt19937& rng, int n_inputs, int n_nodes) {
  RandomProgram p;
  for (int i = 0; i < n_inputs; ++i) {
    Dims shape;
    const int rank = 1 + pick(rng, 3);
    for (int k = 0; k < rank; ++k) shape.push_back(2 + pick(rng, 4));
    p.input_shapes.push_back(shape);
    p.shapes.push_back(shape);
  }
  constexpr CoreSemanticOp kUnary[] = {CoreSemanticOp::kNeg, CoreSemanticOp::kExp, CoreSemanticOp::kTanh,
                                       CoreSemanticOp::kAbs, CoreSemanticOp::kSin};
  constexpr CoreSemanticOp kBinary[] = {CoreSemanticOp::kAdd, CoreSemanticOp::kMul, CoreSemanticOp::kSub};
  while (static_cast<int>(p.nodes.size()) < n_nodes) {
    const int n_values = static_cast<int>(p.shapes.size());
    // Prefer recent values so programs get deep.
    const int a = std::max(0, n_values - 1 - pick(rng, std::min(n_values, 6)));
    const Dims& sa = p.shapes[static_cast<std::size_t>(a)];
    const auto rank = static_cast<std::int64_t>(sa.size());
    Node node{CoreSemanticOp::kNeg, {a}, NoAttributes{}};
    Dims out = sa;
    switch (pick(rng, 9)) {
      case 0:
        node.op = kUnary[pick(rng, 5)];
        break;
      case 1: {
        std::vector<int> same;
        for (int v = 0; v < n_values; ++v)
          if (p.shapes[static_cast<std::size_t>(v)] == sa) same.push_back(v);
        node.op = kBinary[pick(rng, 3)];
        node.operands.push_back(same[static_cast<std::size_t>(pick(rng, static_cast<int>(same.size())))]);
        break;
      }
      case 2: {
        if (rank < 2) continue;
        Dims perm(static_cast<std::size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        node.op = CoreSemanticOp::kTranspose;
        node.attributes = TransposeAttributes{perm};
        for (std::size_t k = 0; k < perm.size(); ++k) out[k] = sa[static_cast<std::size_t>(perm[k])];
        break;
      }
      case 3: {
        if (rank < 1) continue;
        Dims axes;
        for (std::int64_t k = 0; k < rank; ++k)
          if (pick(rng, 2) == 0) axes.push_back(k);
        if (axes.empty()) axes.push_back(pick(rng, static_cast<int>(rank)));
        node.op = CoreSemanticOp::kReduceSum;
        node.attributes = ReduceAttributes{axes};
        out.clear();
        for (std::int64_t k = 0; k < rank; ++k)
          if (std::find(axes.begin(), axes.end(), k) == axes.end()) out.push_back(sa[static_cast<std::size_t>(k)]);
        break;
      }
      case 4: {
        if (rank < 2) continue;
        out.clear();
        out.push_back(sa[0] * sa[1]);
        for (std::size_t k = 2; k < sa.size(); ++k) out.push_back(sa[k]);
        node.op = CoreSemanticOp::kReshape;
        node.attributes = ReshapeAttributes{symbolic_shape(out)};
        break;
      }
      case 5: {
        if (rank < 1) continue;
        const auto axis = static_cast<std::int64_t>(pick(rng, static_cast<int>(rank)));
        node.op = CoreSemanticOp::kConcatenate;
        node.operands.push_back(a);
        node.attributes = ConcatenateAttributes{axis};
        out[static_cast<std::size_t>(axis)] *= 2;
        break;
      }
      case 6: {
        if (rank < 1) continue;
        SliceAttributes s;
        for (std::size_t k = 0; k < sa.size(); ++k) {
          const std::int64_t limit = 1 + pick(rng, static_cast<int>(sa[k]));
          const std::int64_t start = pick(rng, static_cast<int>(limit));
          const std::int64_t stride = 1 + pick(rng, 2);
          s.start.push_back(start);
          s.limit.push_back(limit);
          s.stride.push_back(stride);
          out[k] = (limit - start + stride - 1) / stride;
        }
        node.op = CoreSemanticOp::kSlice;
        node.attributes = s;
        break;
      }
      case 7: {
        if (rank > 3) continue;
        BroadcastInDimAttributes bc;
        bc.shape.push_back(2 + pick(rng, 2));
        for (std::int64_t k = 0; k < rank; ++k) {
          bc.shape.push_back(sa[static_cast<std::size_t>(k)]);
          bc.dims.push_back(k + 1);
        }
        out = *exact_shape(bc.shape);
        node.op = CoreSemanticOp::kBroadcastInDim;
        node.attributes = bc;
        break;
      }
      case 8: {
        if (rank < 1) continue;
        // Contract one axis of a with an equal-extent axis of some b.
        std::vector<std::pair<int, std::int64_t>> candidates;
        const auto ka = static_cast<std::int64_t>(pick(rng, static_cast<int>(rank)));
        for (int v = 0; v < n_values; ++v) {
          const Dims& sb = p.shapes[static_cast<std::size_t>(v)];
          for (std::size_t kb = 0; kb < sb.size(); ++kb)
            if (sb[kb] == sa[static_cast<std::size_t>(ka)] && sa.size() + sb.size() <= 6)
              candidates.emplace_back(v, static_cast<std::int64_t>(kb));
        }
        if (candidates.empty()) continue;
        auto [b, kb] = candidates[static_cast<std::size_t>(pick(rng, static_cast<int>(candidates.size())))];
        const Dims& sb = p.shapes[static_cast<std::size_t>(b)];
        node.op = CoreSemanticOp::kDotGeneral;
        node.operands.push_back(b);
        node.attributes = DotGeneralAttributes{{}, {}, {ka}, {kb}};
        out.clear();
        for (std::int64_t k = 0; k < rank; ++k)
          if (k != ka) out.push_back(sa[static_cast<std::size_t>(k)]);
        for (std::size_t k = 0; k < sb.size(); ++k)
          if (static_cast<std::int64_t>(k) != kb) out.push_back(sb[k]);
        break;
      }
    }
    p.nodes.push_back(std::move(node));
    p.shapes.push_back(out);
  }
  // Outputs: every node nobody consumes, in a random order.
  std::vector<bool> consumed(p.shapes.size(), false);
  for (const Node& n : p.nodes)
    for (int v : n.operands) consumed[static_cast<std::size_t>(v)] = true;
  for (int v = n_inputs; v < static_cast<int>(p.shapes.size()); ++v)
    if (!consumed[static_cast<std::size_t>(v)]) p.outputs.push_back(v);
  std::shuffle(p.outputs.begin(), p.outputs.end(), rng);
  return p;
}

// A random topological order of the nodes.
std::vector<int> random_order(const RandomProgram& p, std::mt19937& rng) {
  const int n_inputs = static_cast<int>(p.input_shapes.size());
  std::vector<bool> done(p.shapes.size(), false);
  for (int i = 0; i < n_inputs; ++i) done[static_cast<std::size_t>(i)] = true;
  std::vector<int> order;
  while (order.size() < p.nodes.size()) {
    std::vector<int> ready;
    for (int n = 0; n < static_cast<int>(p.nodes.size()); ++n) {
      if (done[static_cast<std::size_t>(n + n_inputs)]) continue;
      bool ok = true;
      for (int v : p.nodes[static_cast<std::size_t>(n)].operands) ok = ok && done[static_cast<std::size_t>(v)];
      if (ok) ready.push_back(n);
    }
    const int n = ready[static_cast<std::size_t>(pick(rng, static_cast<int>(ready.size())))];
    done[static_cast<std::size_t>(n + n_inputs)] = true;
    order.push_back(n);
  }
  return order;
}

// Builds `p` emitting nodes in `order`; inputs get `shapes` (exact) or
// fresh unknown symbols. Returns the builder's error, if any.
Result<FrozenProgram> build(const RandomProgram& p, const std::vector<int>& order, bool symbolic,
                            const std::vector<Dims>& shapes, std::vector<ValueMetadata>* inferred = nullptr) {
  ProgramBuilder b;
  const auto n_inputs = p.input_shapes.size();
  std::vector<ProgramValue> values(p.shapes.size());
  for (std::size_t i = 0; i < n_inputs; ++i) {
    SymbolicShape spec;
    for (std::int64_t e : shapes[i]) spec.push_back(symbolic ? SymbolicExtent::unknown() : SymbolicExtent(e));
    TENFERRO_ASSIGN_OR_RETURN(values[i], b.add_input(DType::kFloat64, spec));
  }
  for (int n : order) {
    const Node& node = p.nodes[static_cast<std::size_t>(n)];
    std::vector<ProgramValue> operands;
    for (int v : node.operands) operands.push_back(values[static_cast<std::size_t>(v)]);
    TENFERRO_ASSIGN_OR_RETURN(values[n_inputs + static_cast<std::size_t>(n)],
                              b.emit(node.op, operands, node.attributes));
  }
  if (inferred != nullptr) {
    inferred->clear();
    for (ProgramValue v : values) inferred->push_back(*b.metadata(v));
  }
  std::vector<ProgramValue> outputs;
  for (int v : p.outputs) outputs.push_back(values[static_cast<std::size_t>(v)]);
  return b.freeze(outputs);
}

class IdentityTransform : public SemanticTransform {
 public:
  std::string_view name() const noexcept override { return "identity"; }
  std::uint64_t options_hash() const noexcept override { return 0; }
  Result<SmallVector<ProgramValue, 4>> run(const SemanticProgram& input, TransformBuilder& out) const override {
    std::vector<ProgramValue> map(input.num_values());
    for (std::size_t i = 0; i < input.num_inputs(); ++i) map[input.input(i).index()] = out.input(i);
    for (OperationView op : input.operations()) {
      std::vector<ProgramValue> operands;
      for (ValueId v : op.operands()) operands.push_back(map[v.index()]);
      TENFERRO_ASSIGN_OR_RETURN(auto r, out.copy_operation(op, operands));
      map[op.result().index()] = r[0];
    }
    SmallVector<ProgramValue, 4> outputs;
    for (ValueId v : input.outputs()) outputs.push_back(map[v.index()]);
    return outputs;
  }
};

TEST(RandomProgramTest, OrderIndependenceImportTransformAndSensitivity) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 150; ++trial) {
    SCOPED_TRACE(trial);
    RandomProgram p = generate(rng, 1 + pick(rng, 3), 5 + pick(rng, 30));
    std::vector<int> in_order(p.nodes.size());
    std::iota(in_order.begin(), in_order.end(), 0);
    std::vector<ValueMetadata> inferred;
    auto a = build(p, in_order, false, p.input_shapes, &inferred);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    for (std::size_t v = 0; v < p.shapes.size(); ++v) {
      ASSERT_EQ(inferred[v], ValueMetadata::exact(DType::kFloat64, p.shapes[v])) << "value " << v;
    }
    auto b = build(p, random_order(p, rng), false, p.input_shapes);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->program->fingerprint(), b->program->fingerprint());
    EXPECT_TRUE(structurally_equal(*a->program, *b->program));
    EXPECT_EQ(a->program->explain(), b->program->explain());

    // Import into a fresh builder, and an identity transform.
    ProgramBuilder fresh;
    std::vector<ProgramValue> inputs;
    for (const Dims& s : p.input_shapes) inputs.push_back(*fresh.add_input(DType::kFloat64, symbolic_shape(s)));
    auto imported = fresh.import_program(*a->program, inputs);
    ASSERT_TRUE(imported.ok()) << imported.status().to_string();
    EXPECT_EQ(fresh.freeze(*imported)->program->fingerprint(), a->program->fingerprint());
    auto transformed = apply_transform(IdentityTransform(), *a);
    ASSERT_TRUE(transformed.ok()) << transformed.status().to_string();
    EXPECT_EQ(transformed->program->fingerprint(), a->program->fingerprint());

    // One unary op replaced by another: a different program.
    for (std::size_t n = 0; n < p.nodes.size(); ++n) {
      CoreSemanticOp& op = p.nodes[n].op;
      if (op != CoreSemanticOp::kNeg && op != CoreSemanticOp::kExp) continue;
      op = op == CoreSemanticOp::kNeg ? CoreSemanticOp::kExp : CoreSemanticOp::kNeg;
      auto mutated = build(p, in_order, false, p.input_shapes);
      ASSERT_TRUE(mutated.ok());
      EXPECT_NE(mutated->program->fingerprint(), a->program->fingerprint());
      EXPECT_FALSE(structurally_equal(*mutated->program, *a->program));
      break;
    }
  }
}

TEST(RandomProgramTest, SymbolicGuardsMatchConcreteBuilds) {
  std::mt19937 rng(977);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 150; ++trial) {
    SCOPED_TRACE(trial);
    RandomProgram p = generate(rng, 1 + pick(rng, 3), 4 + pick(rng, 20));
    std::vector<int> order(p.nodes.size());
    std::iota(order.begin(), order.end(), 0);
    auto symbolic = build(p, order, true, p.input_shapes);
    ASSERT_TRUE(symbolic.ok()) << symbolic.status().to_string();
    const SemanticProgram& sp = *symbolic->program;
    // The true shapes, then single-extent perturbations.
    std::vector<std::vector<Dims>> candidates{p.input_shapes};
    for (int k = 0; k < 4; ++k) {
      std::vector<Dims> perturbed = p.input_shapes;
      Dims& shape = perturbed[static_cast<std::size_t>(pick(rng, static_cast<int>(perturbed.size())))];
      shape[static_cast<std::size_t>(pick(rng, static_cast<int>(shape.size())))] += 1 + pick(rng, 2);
      candidates.push_back(perturbed);
    }
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      std::vector<ConcreteInput> concrete;
      for (const Dims& s : candidates[c]) concrete.push_back({DType::kFloat64, s});
      SymbolValues symbols;
      const Status guards = sp.check_guards(concrete, &symbols);
      auto exact = build(p, order, false, candidates[c]);
      ASSERT_EQ(guards.ok(), exact.ok()) << "candidate " << c << ": guards " << guards.to_string() << ", exact build "
                                         << exact.status().to_string() << "\n"
                                         << sp.explain();
      if (c == 0) {
        ASSERT_TRUE(guards.ok());
      }
      if (!guards.ok()) {
        EXPECT_EQ(guards.code(), ErrorCode::kShapeGuardFailed);
        ++rejected;
        continue;
      }
      ++accepted;
      for (std::size_t o = 0; o < sp.outputs().size(); ++o) {
        auto shape = sp.concrete_shape(sp.outputs()[o], symbols);
        ASSERT_TRUE(shape.ok());
        EXPECT_EQ(ValueMetadata::exact(DType::kFloat64, *shape),
                  exact->program->metadata(exact->program->outputs()[o]));
      }
    }
  }
  EXPECT_GT(accepted, 150);
  EXPECT_GT(rejected, 50);
}

}  // namespace
}  // namespace tenferro::program
