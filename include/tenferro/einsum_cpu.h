// Umbrella header of the einsum_cpu component: the native CPU einsum engine
// (executor, execution plans, plan cache) and its runtime adapter
// (cpu_extension_module), over the backend-neutral einsum component.
#pragma once

#include "tenferro/einsum.h"
#include "tenferro/einsum_cpu/cpu_engine.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/einsum_cpu/execution_plan.h"
#include "tenferro/einsum_cpu/plan_cache.h"
#include "tenferro/einsum_cpu/slice_executor.h"
