// Umbrella header of the cpu_engine component: the CPU engine's runtime
// registration (register_cpu_engine, CpuEngineOptions).
#pragma once

#include "tenferro/cpu_engine/engine.h"
