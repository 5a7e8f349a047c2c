// Umbrella header of the linalg_cpu component: the batched CPU linalg engine
// (cpu_extension_module) with its LAPACK and Eigen providers and provider
// policy, over the backend-neutral linalg component (tenferro/linalg.h).
#pragma once

#include "tenferro/linalg.h"
#include "tenferro/linalg_cpu/cpu_engine.h"
#include "tenferro/linalg_cpu/eigen_provider.h"
#include "tenferro/linalg_cpu/lapack_provider.h"
#include "tenferro/linalg_cpu/linalg_provider.h"
#include "tenferro/linalg_cpu/provider_policy.h"
