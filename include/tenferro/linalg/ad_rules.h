// The AD rules of the linalg family: one ad::ExtensionAdRule for
// "tenferro.linalg", installed explicitly in an ad::AdContext (no global
// inventory). Formulas, the gauge the derivatives follow and the treatment
// of degenerate spectra: "Automatic differentiation" in docs/linalg.md.
#pragma once

#include <memory>

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/ad_rule.h"

namespace tenferro::linalg {

/// The rule: linearize for every linalg operation (forward mode), and the
/// transpose of the linear linalg nodes its linearizations emit (solve and
/// triangular_solve, linear in their right-hand side). Immutable;
/// thread-safe.
std::shared_ptr<const ad::ExtensionAdRule> make_linalg_ad_rule();

/// context.install_rule(make_linalg_ad_rule()).
Status install_linalg_ad_rules(ad::AdContext& context);

}  // namespace tenferro::linalg
