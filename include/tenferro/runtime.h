// Umbrella header of the runtime component: what users of a Runtime need
// (building one, eager contexts, prepare and run, placement, configuration).
// The interfaces engine authors implement are in tenferro/runtime/spi.h.
#pragma once

#include "tenferro/runtime/admission.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/execution.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/plan_cache.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/signature.h"
