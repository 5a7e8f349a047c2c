// Umbrella header of the ad component: forward and reverse automatic
// differentiation as SemanticProgram -> SemanticProgram transforms
// (AdContext), the rule-authoring interface for extension families, and
// eager / functional differentiation on a runtime. docs/ad.md describes
// the design and the complex convention.
#pragma once

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/ad_program.h"
#include "tenferro/ad/ad_rule.h"
#include "tenferro/ad/functional.h"
#include "tenferro/ad/gradient_tape.h"
