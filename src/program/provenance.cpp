// Node provenance records.
#include "tenferro/program/provenance.h"

namespace tenferro::program {

ProvenanceRef make_provenance(std::string label, ProvenanceRef derived_from) {
  return std::make_shared<const ProvenanceRecord>(ProvenanceRecord{std::move(label), std::move(derived_from)});
}

bool derives_from(const ProvenanceRef& provenance, const ProvenanceRecord* origin) noexcept {
  for (const ProvenanceRecord* p = provenance.get(); p != nullptr; p = p->derived_from.get())
    if (p == origin) return true;
  return false;
}

std::string describe_provenance(const ProvenanceRef& provenance) {
  if (!provenance) return "(none)";
  std::string out;
  for (const ProvenanceRecord* p = provenance.get(); p != nullptr; p = p->derived_from.get()) {
    if (!out.empty()) out += " <- ";
    out += p->label;
  }
  return out;
}

}  // namespace tenferro::program
