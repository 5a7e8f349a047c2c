// Umbrella header of the einsum component: subscripts, binding, cost model,
// contraction orders and trees, path planning, the einsum extension op, and
// the native CPU engine with its plan cache and runtime adapter.
#pragma once

#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/cost_model.h"
#include "tenferro/einsum/cpu_engine.h"
#include "tenferro/einsum/cpu_executor.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/execution_plan.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/plan_cache.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/subscripts.h"
