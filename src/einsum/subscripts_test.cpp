// Tests of subscript parsing (string and sublist notation, nested order) and
// of ContractionOrder validation and translation.
#include "tenferro/einsum/subscripts.h"

#include <gtest/gtest.h>

#include "tenferro/einsum/contraction_order.h"

namespace tenferro::einsum {
namespace {

using Keys = SmallVector<LabelKey, 8>;

Keys keys(std::u32string_view text) {
  Keys out;
  for (char32_t c : text) out.push_back(static_cast<LabelKey>(c));
  return out;
}

// Expects a kInvalidArgument whose message contains every fragment.
void expect_error(const Status& status, std::initializer_list<std::string_view> fragments) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.to_string();
  for (std::string_view fragment : fragments)
    EXPECT_NE(status.message().find(fragment), std::string_view::npos)
        << "missing \"" << fragment << "\" in: " << status.message();
}

TEST(SubscriptsTest, ExplicitAndImplicitOutput) {
  auto s = Subscripts::parse("ij,jk->ik");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->num_operands(), 2);
  EXPECT_EQ(s->operands()[0].labels, keys(U"ij"));
  EXPECT_EQ(s->operands()[1].labels, keys(U"jk"));
  ASSERT_TRUE(s->explicit_output());
  EXPECT_EQ(s->explicit_output()->labels, keys(U"ik"));
  EXPECT_FALSE(s->nesting());
  EXPECT_EQ(s->to_string(), "ij,jk->ik");

  auto implicit = Subscripts::parse("ij,jk");
  ASSERT_TRUE(implicit.ok());
  EXPECT_FALSE(implicit->explicit_output());
  EXPECT_EQ(implicit->to_string(), "ij,jk");

  // A scalar operand and an empty output are both legal.
  auto scalar = Subscripts::parse("i,->");
  ASSERT_TRUE(scalar.ok()) << scalar.status().to_string();
  EXPECT_EQ(scalar->num_operands(), 2);
  EXPECT_TRUE(scalar->operands()[1].labels.empty());
  EXPECT_TRUE(scalar->explicit_output()->labels.empty());
}

TEST(SubscriptsTest, UnicodeDigitsAndSpaces) {
  auto s = Subscripts::parse(" ÅЖ , Жλ0 -> λÅ0 ");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->operands()[0].labels, keys(U"ÅЖ"));
  EXPECT_EQ(s->operands()[1].labels, keys(U"Жλ0"));
  EXPECT_EQ(s->explicit_output()->labels, keys(U"λÅ0"));
  EXPECT_EQ(s->label_name(static_cast<LabelKey>(U'Ж')), "Ж");
  EXPECT_EQ(s->to_string(), "ÅЖ,Жλ0->λÅ0");
  // Four-byte UTF-8 works too.
  auto astral = Subscripts::parse("\U0001D49C\U0001D49C->");
  ASSERT_TRUE(astral.ok());
  EXPECT_EQ(astral->operands()[0].labels, keys(U"\U0001D49C\U0001D49C"));
}

TEST(SubscriptsTest, Ellipsis) {
  auto s = Subscripts::parse("...ij,j...->i...");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->operands()[0].ellipsis_at, 0);
  EXPECT_EQ(s->operands()[1].ellipsis_at, 1);
  EXPECT_EQ(s->explicit_output()->ellipsis_at, 1);
  EXPECT_FALSE(Subscripts::parse("ij").value().operands()[0].has_ellipsis());
  EXPECT_EQ(s->to_string(), "...ij,j...->i...");
}

TEST(SubscriptsTest, NestedOrder) {
  auto s = Subscripts::parse("((ij,jk),kl)->il");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->num_operands(), 3);
  ASSERT_TRUE(s->nesting());
  // Step 0 = ij·jk (node 3), step 1 = node 3 · kl.
  const std::vector<ContractionOrder::Step> expected{{0, 1}, {3, 2}};
  EXPECT_EQ(std::vector<ContractionOrder::Step>(s->nesting()->steps().begin(), s->nesting()->steps().end()), expected);
  EXPECT_EQ(s->to_string(), "((ij,jk),kl)->il");

  // Top-level items chain left to right once any parenthesis is present.
  auto top = Subscripts::parse("(ij,jk),kl->il");
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(*top->nesting(), *s->nesting());

  // Right-nested groups and groups of three.
  auto right = Subscripts::parse("ab,(bc,(cd,de))->ae");
  ASSERT_TRUE(right.ok()) << right.status().to_string();
  const std::vector<ContractionOrder::Step> right_steps{{2, 3}, {1, 4}, {0, 5}};
  EXPECT_EQ(std::vector<ContractionOrder::Step>(right->nesting()->steps().begin(), right->nesting()->steps().end()),
            right_steps);
  auto triple = Subscripts::parse("(ab,bc,cd),de");
  ASSERT_TRUE(triple.ok());
  EXPECT_EQ(triple->nesting()->to_string(), "(((0,1),2),3)");
}

TEST(SubscriptsTest, Sublists) {
  const std::vector<std::vector<LabelKey>> ops{{0, 1}, {1, 2}};
  auto s = Subscripts::from_sublists(ops, std::vector<LabelKey>{0, 2});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->notation(), LabelNotation::kIntegers);
  EXPECT_EQ(s->operands()[1].labels, (Keys{1, 2}));
  EXPECT_EQ(s->to_string(), "[0,1],[1,2]->[0,2]");
  EXPECT_EQ(s->label_name(7), "7");

  const std::vector<std::vector<LabelKey>> with_ellipsis{{kEllipsisKey, 5}, {5, 1000000}};
  auto e = Subscripts::from_sublists(with_ellipsis, std::nullopt);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->operands()[0].ellipsis_at, 0);
  EXPECT_FALSE(e->explicit_output());
  EXPECT_EQ(e->to_string(), "[...,5],[5,1000000]");

  const std::vector<std::vector<LabelKey>> negative{{0, -3}};
  expect_error(Subscripts::from_sublists(negative, std::nullopt).status(), {"operand 0", "-3", "position 1"});
  const std::vector<std::vector<LabelKey>> two_ellipses{{kEllipsisKey, 0, kEllipsisKey}};
  expect_error(Subscripts::from_sublists(two_ellipses, std::nullopt).status(), {"operand 0", "second ellipsis"});
  expect_error(Subscripts::from_sublists(ops, std::vector<LabelKey>{0, 9}).status(), {"output label '9'"});
  expect_error(Subscripts::from_sublists(ops, std::vector<LabelKey>{2, 2}).status(), {"'2'", "more than once"});
}

TEST(SubscriptsTest, MalformedStringsNameOperandAndCharacter) {
  expect_error(Subscripts::parse("ij,j?k->ik").status(), {"operand 1", "'?'", "byte 4"});
  expect_error(Subscripts::parse("ij->i->j").status(), {"'-'", "the output"});
  expect_error(Subscripts::parse("ij-jk").status(), {"'-'", "operand 0", "\"->\""});
  expect_error(Subscripts::parse("ij>jk").status(), {"'>'", "operand 0"});
  expect_error(Subscripts::parse("ij,j.k").status(), {"operand 1", "'.'"});
  expect_error(Subscripts::parse("i...j...").status(), {"operand 0", "second \"...\""});
  expect_error(Subscripts::parse("ij,jk->ii").status(), {"output label 'i'", "more than once"});
  expect_error(Subscripts::parse("ij,jk->iz").status(), {"output label 'z'", "does not appear"});
  expect_error(Subscripts::parse("ij,jk->i,k").status(), {"','", "the output"});
  expect_error(Subscripts::parse("ij,\xff").status(), {"operand 1", "invalid UTF-8", "byte 3"});
  expect_error(Subscripts::parse("ij,\xd0").status(), {"operand 1", "invalid UTF-8"});          // truncated
  expect_error(Subscripts::parse("ij,\xc0\xaf").status(), {"operand 1", "invalid UTF-8"});      // overlong
  expect_error(Subscripts::parse("ij,\xed\xa0\x80").status(), {"operand 1", "invalid UTF-8"});  // surrogate
  expect_error(Subscripts::parse("i\xc2\x85j").status(), {"operand 0", "control character U+0085"});
  // C0 controls by their code point: a raw NUL in a message read as a space (the edge audit).
  expect_error(Subscripts::parse(std::string_view("i\0,jk", 5)).status(),
               {"operand 0", "control character U+0000", "byte 1"});
  expect_error(Subscripts::parse("ij,j\x7f").status(), {"operand 1", "control character U+007F"});
  expect_error(Subscripts::parse("(ij,jk").status(), {"'('", "not closed"});
  expect_error(Subscripts::parse("(ij),jk").status(), {"group", "two or more"});
  expect_error(Subscripts::parse("ij),jk").status(), {"')'", "closes no '('"});
  expect_error(Subscripts::parse("ij(jk,kl)").status(), {"operand 0", "'('", "','"});
  expect_error(Subscripts::parse("ij->(i)").status(), {"the output", "'('"});
}

TEST(SubscriptsTest, LongSubscriptsAreAbbreviatedInMessages) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "жa,";
  text += "a?";
  const Status status = Subscripts::parse(text).status();
  expect_error(status, {"operand 300", "'?'", "…"});
  EXPECT_LT(status.message().size(), 300u);
}

TEST(ContractionOrderTest, SsaValidation) {
  const std::vector<ContractionOrder::Step> good{{0, 1}, {3, 2}};
  auto order = ContractionOrder::from_ssa(3, good);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->root(), 4);
  EXPECT_EQ(order->to_string(), "((0,1),2)");

  const std::vector<ContractionOrder::Step> too_few{{0, 1}};
  expect_error(ContractionOrder::from_ssa(3, too_few).status(), {"1 steps", "expected 2"});
  const std::vector<ContractionOrder::Step> future{{0, 3}, {1, 2}};
  expect_error(ContractionOrder::from_ssa(3, future).status(), {"step 0", "node 3"});
  const std::vector<ContractionOrder::Step> reused{{0, 1}, {0, 2}};
  expect_error(ContractionOrder::from_ssa(3, reused).status(), {"step 1", "node 0", "already consumed"});
  const std::vector<ContractionOrder::Step> self{{1, 1}, {0, 3}};
  expect_error(ContractionOrder::from_ssa(3, self).status(), {"step 0", "itself"});
  expect_error(ContractionOrder::from_ssa(0, {}).status(), {"at least one input"});
  EXPECT_TRUE(ContractionOrder::from_ssa(1, {}).ok());
}

TEST(ContractionOrderTest, OptEinsumPathRoundTrip) {
  // opt_einsum: [(0, 2), (0, 1)] over 3 inputs contracts 0·2 first (node 3), then 1·3.
  const std::vector<std::pair<std::int64_t, std::int64_t>> path{{0, 2}, {0, 1}};
  auto order = ContractionOrder::from_opt_einsum_path(3, path);
  ASSERT_TRUE(order.ok()) << order.status().to_string();
  const std::vector<ContractionOrder::Step> expected{{0, 2}, {1, 3}};
  EXPECT_EQ(std::vector<ContractionOrder::Step>(order->steps().begin(), order->steps().end()), expected);
  EXPECT_EQ(order->to_opt_einsum_path(), path);

  const std::vector<std::pair<std::int64_t, std::int64_t>> out_of_range{{0, 3}, {0, 1}};
  expect_error(ContractionOrder::from_opt_einsum_path(3, out_of_range).status(), {"pair 0", "(0, 3)"});
  const std::vector<std::pair<std::int64_t, std::int64_t>> incomplete{{0, 1}};
  expect_error(ContractionOrder::from_opt_einsum_path(3, incomplete).status(), {"1 pairwise steps", "expected 2"});

  auto parsed = ContractionOrder::parse(4, " ((0, 2),(3,1))");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  const std::vector<ContractionOrder::Step> parsed_steps{{0, 2}, {3, 1}, {4, 5}};
  EXPECT_EQ(std::vector<ContractionOrder::Step>(parsed->steps().begin(), parsed->steps().end()), parsed_steps);
  EXPECT_EQ(ContractionOrder::parse(4, parsed->to_string()).value(), *parsed);
  EXPECT_EQ(ContractionOrder::parse(1, "0").value().root(), 0);
  expect_error(ContractionOrder::parse(3, "((0,1),2").status(), {"')'", "byte 8"});
  expect_error(ContractionOrder::parse(3, "((0,1),7)").status(), {"input 7", "out of range"});
  expect_error(ContractionOrder::parse(3, "((0,1),1)").status(), {"input 1", "twice"});
  expect_error(ContractionOrder::parse(3, "(0,1)").status(), {"never uses input 2"});
  expect_error(ContractionOrder::parse(3, "((0,1)2)").status(), {"','"});
  expect_error(ContractionOrder::parse(3, "((0,1),x)").status(), {"input index or '('"});

  const ContractionOrder ltr = ContractionOrder::left_to_right(4);
  EXPECT_EQ(ltr.to_string(), "(((0,1),2),3)");
  EXPECT_EQ(ContractionOrder::left_to_right(1).to_string(), "0");
}

}  // namespace
}  // namespace tenferro::einsum
