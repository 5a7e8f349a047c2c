// Umbrella header of the ad_runtime component: differentiation executed
// through a Runtime (functional jvp / vjp / grad / hvp over programs, and the
// eager GradientTape), over the program transforms of tenferro/ad.h.
#pragma once

#include "tenferro/ad.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/ad_runtime/gradient_tape.h"
