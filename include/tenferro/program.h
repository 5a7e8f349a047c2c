// Umbrella header of the program component: the backend-neutral semantic IR.
#pragma once

#include "tenferro/program/attributes.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/program_value.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/program/semantic_transform.h"
#include "tenferro/program/shape_guard.h"
#include "tenferro/program/specialization.h"
#include "tenferro/program/symbolic_extent.h"
#include "tenferro/program/validation.h"
