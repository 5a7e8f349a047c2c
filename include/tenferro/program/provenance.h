// Node provenance: where an operation came from, for diagnostics and
// explain(). Provenance is never part of a program's identity (fingerprint,
// structural equality), but lowering and transforms must preserve it.
#pragma once

#include <memory>
#include <string>

namespace tenferro::program {

/// One step of a node's history: a label ("einsum at model.cpp:42",
/// "lowered from tenferro.einsum", "transform fold_transposes") and what it
/// was derived from. Immutable; shared by every node it describes.
struct ProvenanceRecord {
  std::string label;
  std::shared_ptr<const ProvenanceRecord> derived_from;
};

/// Shared, immutable provenance; never null on a built operation.
using ProvenanceRef = std::shared_ptr<const ProvenanceRecord>;

/// A new record labelled `label`, derived from `derived_from` (may be null).
ProvenanceRef make_provenance(std::string label, ProvenanceRef derived_from = nullptr);

/// True when `origin` is `provenance` itself or one of its ancestors.
bool derives_from(const ProvenanceRef& provenance, const ProvenanceRecord* origin) noexcept;

/// "label <- parent label <- ..."; "(none)" for null.
std::string describe_provenance(const ProvenanceRef& provenance);

}  // namespace tenferro::program
