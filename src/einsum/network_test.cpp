// Tests of binding subscripts to shapes (Note [Binding rules]): label ids
// and extents, diagonals, summed-out labels, ellipsis and size-1
// broadcasting, implicit outputs, typed errors. Values are checked against
// numpy.einsum through the reference python: every case is planned, the
// tree executed naively, and the result compared.
#include "tenferro/einsum/network.h"

#include <sstream>

#include <gtest/gtest.h>

#include "einsum_test_support.h"

namespace tenferro::einsum {
namespace {

using test_support::Dense;
using test_support::refs;
using Shapes = std::vector<std::vector<std::int64_t>>;

Result<Network> bind_shapes(std::string_view subscripts, const Shapes& shapes) {
  const auto r = refs(shapes);
  return Network::bind(subscripts, r);
}

void expect_error(const Status& status, ErrorCode code, std::initializer_list<std::string_view> fragments) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  for (std::string_view fragment : fragments)
    EXPECT_NE(status.message().find(fragment), std::string_view::npos)
        << "missing \"" << fragment << "\" in: " << status.message();
}

TEST(NetworkTest, LabelsExtentsAndOutput) {
  auto net = bind_shapes("ij,jk->ik", {{2, 3}, {3, 4}});
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  EXPECT_EQ(net->num_labels(), 3);
  EXPECT_EQ(net->extent(0), 2);
  EXPECT_EQ(net->extent(1), 3);
  EXPECT_EQ(net->extent(2), 4);
  EXPECT_EQ(net->output(), (LabelList{0, 2}));
  EXPECT_EQ(net->output_shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(net->to_string(), "ij,jk->ik");
  EXPECT_EQ(net->dtype(), DType::kFloat64);
}

TEST(NetworkTest, DiagonalsTracesAndSummedLabels) {
  auto diag = bind_shapes("iij->ij", {{3, 3, 2}});
  ASSERT_TRUE(diag.ok());
  EXPECT_EQ(diag->operand(0).axis_labels, (LabelList{0, 0, 1}));
  EXPECT_EQ(diag->operand(0).labels, (LabelList{0, 1}));

  auto triple = bind_shapes("iii", {{2, 2, 2}});
  ASSERT_TRUE(triple.ok());
  EXPECT_TRUE(triple->output().empty());  // label written three times: summed

  // 'k' only in operand 1 and not in the output: summed out.
  auto summed = bind_shapes("ij,jk->i", {{2, 3}, {3, 4}});
  ASSERT_TRUE(summed.ok());
  EXPECT_EQ(summed->output(), (LabelList{0}));
}

TEST(NetworkTest, EllipsisAndSizeOneBroadcasting) {
  // Right-aligned broadcast dims: operand 0 covers two, operand 1 one.
  auto net = bind_shapes("...ij,...jk->...ik", {{5, 1, 2, 3}, {4, 3, 6}});
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const LabelId e0 = net->operand(0).axis_labels[0];
  EXPECT_EQ(net->labels()[static_cast<std::size_t>(e0)].ellipsis_dim, 0);
  EXPECT_EQ(net->output_shape(), (std::vector<std::int64_t>{5, 4, 2, 6}));
  // Operand 0's size-1 axis broadcasts against 4.
  EXPECT_EQ(net->operand(0).axis_labels[1], kBroadcastAxis);
  EXPECT_EQ(net->label_name(e0), "...[0]");

  // numpy broadcasts size-1 axes of named labels too.
  auto named = bind_shapes("ij,jk->ik", {{2, 1}, {3, 4}});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->operand(0).axis_labels, (LabelList{0, kBroadcastAxis}));
  EXPECT_EQ(named->operand(0).labels, (LabelList{0}));
  EXPECT_EQ(named->extent(1), 3);

  // Implicit output: broadcast dims first, then labels seen once, sorted.
  auto implicit = bind_shapes("b...a,cb", {{2, 7, 3}, {4, 2}});
  ASSERT_TRUE(implicit.ok());
  EXPECT_EQ(implicit->output_shape(), (std::vector<std::int64_t>{7, 3, 4}));
}

TEST(NetworkTest, TypedErrorsNameOperandAndLabel) {
  expect_error(bind_shapes("ijk,jk", {{2, 3}, {3, 4}}).status(), ErrorCode::kShapeMismatch,
               {"operand 0", "rank 2", "\"ijk\"", "3 axes"});
  expect_error(bind_shapes("ij,jk", {{2, 3}, {4, 5}}).status(), ErrorCode::kShapeMismatch,
               {"label 'j'", "extent 4 at operand 1 axis 0", "extent 3 at operand 0 axis 1"});
  expect_error(bind_shapes("ii", {{2, 3}}).status(), ErrorCode::kShapeMismatch,
               {"operand 0", "label 'i'", "axes 0 and 1"});
  expect_error(bind_shapes("...i->i", {{2, 3}}).status(), ErrorCode::kShapeMismatch, {"\"...\"", "output"});
  expect_error(bind_shapes("...i,...i->...", {{2, 3}, {4, 3}}).status(), ErrorCode::kShapeMismatch, {"label '...[0]'"});
  expect_error(bind_shapes("ij,jk", {{2, 3}}).status(), ErrorCode::kInvalidArgument,
               {"names 2 operands", "found 1 input"});
  expect_error(bind_shapes("ij", {{2, -3}}).status(), ErrorCode::kInvalidArgument, {"operand 0", "-3", "label 'j'"});
  expect_error(bind_shapes("Жi,ij", {{4, 2}, {5, 2}}).status(), ErrorCode::kShapeMismatch, {"label 'i'"});

  auto parsed = Subscripts::parse("ij,jk").value();
  const Shapes shapes{{2, 3}, {3, 4}};
  const auto r = refs(shapes);
  const std::vector<DType> dtypes{DType::kFloat64, DType::kFloat32};
  expect_error(Network::bind(parsed, r, dtypes).status(), ErrorCode::kDTypeMismatch, {"operand 1", "float32"});
}

// Note [Einsum binding errors are compile-stage]: one stage for these
// failures, whichever binding meets them.
TEST(NetworkTest, BindingAndParsingErrorsAreCompileStage) {
  for (const Status& st : {bind_shapes("ij,jk", {{2, 3}, {4, 5}}).status(), bind_shapes("ij,jk", {{2, 3}}).status(),
                           bind_shapes("ij,jk-ik", {{2, 3}, {3, 4}}).status(), Subscripts::parse("i!j").status()}) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.stage(), ErrorStage::kCompile) << st.to_string();
    EXPECT_EQ(st.to_string().rfind("compile ", 0), 0u) << st.to_string();
  }
}

TEST(NetworkTest, SublistNotationUsesIntegerLabels) {
  const std::vector<std::vector<LabelKey>> ops{{10, 2}, {2, 7}};
  auto subscripts = Subscripts::from_sublists(ops, std::nullopt).value();
  const Shapes shapes{{2, 3}, {3, 4}};
  const auto r = refs(shapes);
  const std::vector<DType> dtypes(2, DType::kFloat64);
  auto net = Network::bind(subscripts, r, dtypes);
  ASSERT_TRUE(net.ok());
  // Implicit output sorts numerically: 7 before 10.
  EXPECT_EQ(net->output_shape(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(net->to_string(), "[10,2],[2,7]->[7,10]");
}

// One notation case for the numpy comparison.
struct NumpyCase {
  std::string subscripts;  // ASCII, numpy-compatible
  Shapes shapes;
};

std::string python_list(const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(17);
  out << '[';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  out << ']';
  return out.str();
}

std::string python_shape(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::int64_t e : shape) out += std::to_string(e) + ",";
  return out + ")";
}

// Every notation feature, executed through every planner's tree, against numpy.einsum.
TEST(NetworkTest, NotationMatchesNumpy) {
  const std::vector<NumpyCase> cases{
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"ij,jk", {{2, 3}, {3, 4}}},                        // implicit
      {"ba", {{2, 3}}},                                   // implicit transpose
      {"ii->i", {{3, 3}}},                                // diagonal
      {"ii", {{3, 3}}},                                   // trace
      {"iii->i", {{2, 2, 2}}},                            // triple repeat
      {"iij,jk->ik", {{2, 2, 3}, {3, 4}}},                // diagonal inside a contraction
      {"ij,jk->i", {{2, 3}, {3, 4}}},                     // k summed out alone
      {"ijk,kl,lm->", {{2, 3, 2}, {2, 3}, {3, 2}}},       // full contraction
      {"i,j", {{2}, {3}}},                                // outer product
      {"ij,ij->ij", {{2, 3}, {2, 3}}},                    // Hadamard
      {"bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}}},           // batch
      {"ij,jk->ik", {{2, 1}, {3, 4}}},                    // named size-1 broadcast
      {"...ij,...jk->...ik", {{3, 1, 2, 2}, {2, 2, 3}}},  // ellipsis broadcasting
      {"...i,...i", {{2, 3}, {3}}},                       // implicit ellipsis output
      {"i...i", {{2, 3, 2}}},                             // ellipsis between repeats
      {"a...,...b", {{2, 3}, {3, 4}}},
      {"ij,jk,kl,lm->im", {{2, 3}, {3, 2}, {2, 3}, {3, 2}}},
      {"ab,bc,ca->", {{2, 3}, {3, 2}, {2, 2}}},            // cycle
      {"abc,bcd,da->bc", {{2, 3, 2}, {3, 2, 2}, {2, 2}}},  // hyperedge-ish batch labels
      {"i,->i", {{3}, {}}},                                // scalar operand
  };
  std::string script = "import numpy as np\n";
  std::vector<std::vector<Dense>> inputs;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    inputs.push_back(test_support::random_operands(cases[c].shapes, c + 1));
    script += "ops = [";
    for (const Dense& d : inputs.back())
      script += "np.array(" + python_list(d.data) + ", dtype=np.float64).reshape(" + python_shape(d.shape) + "),";
    script += "]\nr = np.einsum('" + cases[c].subscripts + "', *ops)\n";
    script +=
        "print(' '.join(repr(float(v)) for v in np.asarray(r).ravel()), '|', ' '.join(str(s) for s in np.shape(r)))\n";
  }
  const auto output = test_support::run_python(script);
  if (!output) GTEST_SKIP() << "no reference python with numpy";
  std::istringstream lines(*output);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].subscripts);
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    const std::size_t bar = line.find('|');
    Dense expected;
    std::istringstream values(line.substr(0, bar)), shape(line.substr(bar + 1));
    for (double v; values >> v;) expected.data.push_back(v);
    for (std::int64_t e; shape >> e;) expected.shape.push_back(e);
    auto net = bind_shapes(cases[c].subscripts, cases[c].shapes);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    for (PlannerKind planner : {PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kLeftToRight}) {
      auto tree = plan(*net, PlanningPolicy{.planner = planner});
      ASSERT_TRUE(tree.ok()) << tree.status().to_string();
      const Dense got = test_support::execute_tree(*tree, inputs[c]);
      EXPECT_LT(test_support::max_abs_diff(got, expected), 1e-12) << to_string(planner) << "\n" << tree->explain();
    }
  }
}

}  // namespace
}  // namespace tenferro::einsum
