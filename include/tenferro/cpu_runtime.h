// Umbrella header of the cpu_runtime component: a ready CPU runtime with
// the einsum and linalg engines (tenferro/cpu_runtime/cpu_runtime.h), and
// everything its users call on it.
#pragma once

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/linalg_cpu.h"
#include "tenferro/runtime.h"
#include "tenferro/tensor.h"
