// Umbrella header of the einsum component: subscripts, binding, cost model,
// contraction orders and trees, and path planning.
#pragma once

#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/cost_model.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/subscripts.h"
