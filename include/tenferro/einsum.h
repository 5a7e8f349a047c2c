// Umbrella header of the einsum component (backend-neutral): subscripts,
// binding, cost model, contraction orders and trees, path planning, the
// einsum extension op and its eager/graph entry points. The native CPU
// engine is in tenferro/einsum_cpu.h.
#pragma once

#include "tenferro/einsum/benchmark_instance.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/cost_model.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum/subscripts.h"
