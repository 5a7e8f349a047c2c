// Umbrella header of the runtime component.
#pragma once

#include "tenferro/runtime/admission.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/engine.h"
#include "tenferro/runtime/engine_executor.h"
#include "tenferro/runtime/event_domain.h"
#include "tenferro/runtime/execution.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/extension.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/plan_cache.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/providers.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/signature.h"
#include "tenferro/runtime/transfer.h"
