// Parsing of einsum subscripts (Note [Einsum notation] in subscripts.h):
// UTF-8 strings with "...", "->" and nested parentheses, and integer
// sublists. Produces a Subscripts or a kInvalidArgument error that names
// the operand and the offending character or label.
#include "tenferro/einsum/subscripts.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"

namespace tenferro::einsum {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// Appends `cp` to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes one UTF-8 scalar value at text[pos]; returns its length in bytes,
// or 0 for an invalid sequence (truncated, overlong, surrogate, > U+10FFFF,
// stray continuation byte).
std::size_t decode_utf8(std::string_view text, std::size_t pos, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  std::size_t length = 0;
  char32_t min = 0;
  if (lead < 0x80) {
    cp = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  if (cp < min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return length;
}

bool is_ascii_label(char32_t cp) {
  return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9');
}

std::string where(std::int32_t operand) {
  return operand < 0 ? std::string("the output") : fmt::format("operand {}", operand);
}

}  // namespace

std::string label_key_name(LabelKey key, LabelNotation notation) {
  if (notation == LabelNotation::kIntegers) return fmt::format("{}", key);
  std::string out;
  append_utf8(out, static_cast<char32_t>(key));
  return out;
}

std::string Subscripts::label_name(LabelKey key) const { return label_key_name(key, notation_); }

// Checks shared by both notations: an output label at most once and present
// in some operand.
static Status check_output(const Subscripts& s, std::string_view text) {
  if (!s.explicit_output()) return ok_status();
  const Term& out = *s.explicit_output();
  for (std::size_t i = 0; i < out.labels.size(); ++i) {
    const LabelKey key = out.labels[i];
    if (std::find(out.labels.begin(), out.labels.begin() + static_cast<std::ptrdiff_t>(i), key) !=
        out.labels.begin() + static_cast<std::ptrdiff_t>(i)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum subscripts \"{}\": output label '{}' appears more than once; expected each output "
                        "label once",
                        text, s.label_name(key));
    }
    bool found = false;
    for (const Term& term : s.operands())
      found = found || std::find(term.labels.begin(), term.labels.end(), key) != term.labels.end();
    if (!found) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum subscripts \"{}\": output label '{}' does not appear in any operand", text,
                        s.label_name(key));
    }
  }
  return ok_status();
}

// Recursive-descent parser for string notation.
class SubscriptsParser {
 public:
  explicit SubscriptsParser(std::string_view text) : text_(text), shown_(abbreviate(text)) {}

  Result<Subscripts> parse() {
    TENFERRO_TRY(parse_operand_list());
    skip_spaces();
    if (pos_ < text_.size()) {
      // "->" is the only thing that may follow the operands.
      if (text_.substr(pos_, 2) != "->") return unexpected(static_cast<std::int32_t>(result_.operands_.size()) - 1);
      pos_ += 2;
      Term output;
      TENFERRO_TRY(parse_term(-1, output));
      skip_spaces();
      if (pos_ < text_.size()) return unexpected(-1);
      result_.output_ = std::move(output);
    }
    TENFERRO_TRY(check_output(result_, shown_));
    if (has_parentheses_) {
      const auto n = static_cast<std::int32_t>(result_.operands_.size());
      std::vector<ContractionOrder::Step> steps;
      steps.reserve(steps_.size());
      const auto ssa = [n](std::int32_t ref) { return ref >= 0 ? ref : n - 1 - ref; };
      for (auto [a, b] : steps_) steps.emplace_back(ssa(a), ssa(b));
      TENFERRO_ASSIGN_OR_RETURN(ContractionOrder order, ContractionOrder::from_ssa(n, steps));
      result_.nesting_ = std::move(order);
    }
    return std::move(result_);
  }

 private:
  // Item references: input i is i >= 0, the result of step k is -(k+1).
  using ItemRef = std::int32_t;

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  // The whole operand list; when parentheses occur anywhere, the top-level
  // items are contracted left to right too.
  Status parse_operand_list() {
    std::vector<ItemRef> items;
    TENFERRO_TRY(parse_items(items));
    if (has_parentheses_) chain(items);
    return ok_status();
  }

  Status parse_items(std::vector<ItemRef>& items) {
    while (true) {
      ItemRef item = 0;
      TENFERRO_TRY(parse_item(item));
      items.push_back(item);
      skip_spaces();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return ok_status();
    }
  }

  Status parse_item(ItemRef& item) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      has_parentheses_ = true;
      const std::size_t open = pos_++;
      std::vector<ItemRef> items;
      TENFERRO_TRY(parse_items(items));
      if (pos_ >= text_.size() || text_[pos_] != ')') {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum subscripts \"{}\": the '(' at byte {} is not closed; expected ')' after operand {}",
                          shown_, open, result_.operands_.size() - 1);
      }
      if (items.size() < 2) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum subscripts \"{}\": the group at byte {} holds only operand {}; expected a "
                          "parenthesised group of two or more operands",
                          shown_, open, result_.operands_.size() - 1);
      }
      ++pos_;
      item = chain(items);
      return ok_status();
    }
    Term term;
    const auto index = static_cast<std::int32_t>(result_.operands_.size());
    TENFERRO_TRY(parse_term(index, term));
    result_.operands_.push_back(std::move(term));
    item = index;
    return ok_status();
  }

  // Contracts `items` left to right; returns the reference of the result.
  ItemRef chain(const std::vector<ItemRef>& items) {
    ItemRef acc = items[0];
    for (std::size_t i = 1; i < items.size(); ++i) {
      steps_.emplace_back(acc, items[i]);
      acc = -static_cast<ItemRef>(steps_.size());
    }
    return acc;
  }

  // Labels and at most one "..." until a delimiter; `operand` is -1 for the output.
  Status parse_term(std::int32_t operand, Term& term) {
    while (true) {
      skip_spaces();
      if (pos_ >= text_.size()) return ok_status();
      const char c = text_[pos_];
      if (c == ',' || c == ')' || c == '-' || c == '>') {
        if (operand < 0) return unexpected(operand);
        return ok_status();
      }
      if (c == '.') {
        if (text_.substr(pos_, 3) != "...") {
          return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                            "einsum subscripts \"{}\": {} has a '.' at byte {} that does not start \"...\"", shown_,
                            where(operand), pos_);
        }
        if (term.has_ellipsis()) {
          return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                            "einsum subscripts \"{}\": {} has a second \"...\" at byte {}; expected at most one",
                            shown_, where(operand), pos_);
        }
        term.ellipsis_at = static_cast<std::int32_t>(term.labels.size());
        pos_ += 3;
        continue;
      }
      char32_t cp = 0;
      const std::size_t length = decode_utf8(text_, pos_, cp);
      if (length == 0) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum subscripts: {} has invalid UTF-8 at byte {} (byte 0x{:02x}); expected a label",
                          where(operand), pos_, static_cast<unsigned char>(c));
      }
      if (cp < 0x20 || cp == 0x7F) {  // by its code point: a raw NUL in a message reads as nothing or a space
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum subscripts: {} has the control character U+{:04X} at byte {}; expected a label",
                          where(operand), static_cast<std::uint32_t>(cp), pos_);
      }
      if (cp < 0x80 && !is_ascii_label(cp)) {
        if (c == '(' && operand >= 0) {
          return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                            "einsum subscripts \"{}\": operand {} is followed by '(' at byte {}; expected ',' "
                            "before a parenthesised group",
                            shown_, operand, pos_);
        }
        return make_error(
            ErrorCode::kInvalidArgument, ErrorStage::kNone,
            "einsum subscripts \"{}\": {} has '{}' at byte {}; expected a label (letter or digit), \"...\", ','"
            ", '(', ')' or \"->\"",
            shown_, where(operand), c, pos_);
      }
      if (cp >= 0x80 && cp <= 0x9F) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum subscripts: {} has the control character U+{:04X} at byte {}; expected a label",
                          where(operand), static_cast<std::uint32_t>(cp), pos_);
      }
      term.labels.push_back(static_cast<LabelKey>(cp));
      pos_ += length;
    }
  }

  Status unexpected(std::int32_t operand) const {
    const char c = text_[pos_];
    if (c == '-' || c == '>') {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum subscripts \"{}\": unexpected '{}' at byte {} after {}; expected a single \"->\" "
                        "between the operands and the output",
                        shown_, c, pos_, where(operand));
    }
    if (c == ')') {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum subscripts \"{}\": ')' at byte {} after {} closes no '('", shown_, pos_,
                        where(operand));
    }
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum subscripts \"{}\": unexpected '{}' at byte {} in {}; the output is a single term", shown_,
                      c, pos_, where(operand));
  }

  std::string_view text_;
  std::string shown_;  // text_ as quoted in messages
  std::size_t pos_ = 0;
  Subscripts result_;
  bool has_parentheses_ = false;
  std::vector<std::pair<ItemRef, ItemRef>> steps_;
};

// Malformed subscripts are compile-stage in every binding (Note [Einsum
// binding errors are compile-stage] in network.cpp).
Result<Subscripts> Subscripts::parse(std::string_view text) {
  Result<Subscripts> parsed = SubscriptsParser(text).parse();
  if (!parsed.ok()) return parsed.status().in_stage(ErrorStage::kCompile);
  return parsed;
}

Result<Subscripts> Subscripts::from_sublists(std::span<const std::vector<LabelKey>> operands,
                                             const std::optional<std::vector<LabelKey>>& output) {
  Subscripts s;
  s.notation_ = LabelNotation::kIntegers;
  const auto to_term = [](const std::vector<LabelKey>& list, std::int32_t operand, Term& term) -> Status {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const LabelKey key = list[i];
      if (key == kEllipsisKey) {
        if (term.has_ellipsis()) {
          return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                            "einsum sublist: {} has a second ellipsis at position {}; expected at most one",
                            where(operand), i);
        }
        term.ellipsis_at = static_cast<std::int32_t>(term.labels.size());
      } else if (key < 0) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "einsum sublist: {} has label {} at position {}; expected a non-negative integer or the "
                          "ellipsis",
                          where(operand), key, i);
      } else {
        term.labels.push_back(key);
      }
    }
    return ok_status();
  };
  for (std::size_t i = 0; i < operands.size(); ++i) {
    Term term;
    TENFERRO_TRY(to_term(operands[i], static_cast<std::int32_t>(i), term));
    s.operands_.push_back(std::move(term));
  }
  if (output) {
    Term term;
    TENFERRO_TRY(to_term(*output, -1, term));
    s.output_ = std::move(term);
  }
  TENFERRO_TRY(check_output(s, "sublist"));
  return s;
}

namespace {

void append_term(std::string& out, const Term& term, LabelNotation notation) {
  const bool integers = notation == LabelNotation::kIntegers;
  if (integers) out += '[';
  for (std::size_t i = 0; i <= term.labels.size(); ++i) {
    if (static_cast<std::int32_t>(i) == term.ellipsis_at) {
      if (integers && i > 0) out += ',';
      out += "...";
    }
    if (i == term.labels.size()) break;
    if (integers && (i > 0 || term.ellipsis_at == 0)) out += ',';
    out += label_key_name(term.labels[i], notation);
  }
  if (integers) out += ']';
}

}  // namespace

std::string Subscripts::to_string() const {
  std::string out;
  if (nesting_) {
    // Rebuild the canonical fully parenthesised form from the SSA order.
    const std::int32_t n = num_operands();
    std::vector<std::string> nodes(static_cast<std::size_t>(n));
    for (std::int32_t i = 0; i < n; ++i) append_term(nodes[static_cast<std::size_t>(i)], operands_[i], notation_);
    for (auto [a, b] : nesting_->steps()) {
      nodes.push_back(fmt::format("({},{})", nodes[static_cast<std::size_t>(a)], nodes[static_cast<std::size_t>(b)]));
    }
    out = nodes.back();
  } else {
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      if (i > 0) out += ',';
      append_term(out, operands_[i], notation_);
    }
  }
  if (output_) {
    out += "->";
    append_term(out, *output_, notation_);
  }
  return out;
}

}  // namespace tenferro::einsum
