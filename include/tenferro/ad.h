// Umbrella header of the ad component: forward and reverse automatic
// differentiation as SemanticProgram -> SemanticProgram transforms
// (AdContext), the rule-authoring interface for extension families, and
// derivative programs by composition. Running derivatives on a runtime
// (functional jvp/vjp/grad/hvp, the eager GradientTape) is in
// tenferro/ad_runtime.h. docs/ad.md describes the design and the complex
// convention.
#pragma once

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/ad_program.h"
#include "tenferro/ad/ad_rule.h"
#include "tenferro/ad/derivative_programs.h"
