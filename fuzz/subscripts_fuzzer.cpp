// Fuzzes the einsum subscripts parser (Subscripts::parse) and the binding of
// parsed subscripts to shapes (Network::bind). Malformed text must come back
// as a typed error (never a crash or a sanitizer report); accepted text must
// survive a round trip through its canonical form (re-parsed, it prints
// the same canonical text), and binding to shapes
// derived from the input must succeed or return an error.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/subscripts.h"

using tenferro::fuzz::FuzzInput;
using tenferro::fuzz::property_violated;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzInput in(data, size);
  // The first byte seeds the extents used for binding; the rest is text.
  const std::uint8_t extent_seed = in.byte();
  const std::string_view text = in.rest();
  tenferro::Result<tenferro::einsum::Subscripts> parsed = tenferro::einsum::Subscripts::parse(text);
  if (!parsed.ok()) return 0;
  if (parsed->notation() == tenferro::einsum::LabelNotation::kCharacters) {
    const std::string canonical = parsed->to_string();
    tenferro::Result<tenferro::einsum::Subscripts> again = tenferro::einsum::Subscripts::parse(canonical);
    if (!again.ok()) property_violated("canonical form does not parse", canonical);
    // The nesting is compared through the canonical text: one tree has
    // several step orders (ContractionOrder compares steps, not trees).
    if (!std::equal(again->operands().begin(), again->operands().end(), parsed->operands().begin(),
                    parsed->operands().end()) ||
        again->explicit_output() != parsed->explicit_output() ||
        again->nesting().has_value() != parsed->nesting().has_value() || again->to_string() != canonical)
      property_violated("canonical form parses to other subscripts", canonical);
  }
  // Small shapes: one axis per label, three more where an ellipsis stands.
  std::vector<std::vector<std::int64_t>> shapes;
  for (const tenferro::einsum::Term& term : parsed->operands()) {
    std::vector<std::int64_t> shape(term.labels.size() + (term.has_ellipsis() ? extent_seed % 4 : 0));
    for (std::size_t a = 0; a < shape.size(); ++a)
      shape[a] = 1 + static_cast<std::int64_t>((extent_seed >> (a % 7)) & 1);
    shapes.push_back(std::move(shape));
  }
  std::vector<tenferro::IntArrayRef> refs(shapes.begin(), shapes.end());
  const std::vector<tenferro::DType> dtypes(shapes.size(), tenferro::DType::kFloat64);
  tenferro::Result<tenferro::einsum::Network> net = tenferro::einsum::Network::bind(*parsed, refs, dtypes);
  if (net.ok() && net->num_operands() != parsed->num_operands())
    property_violated("bound network has another operand count", text);
  return 0;
}
