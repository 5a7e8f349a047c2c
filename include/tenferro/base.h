// Umbrella header of the base component: errors, ids, small vectors, hashing.
#pragma once

#include "tenferro/base/assert.h"
#include "tenferro/base/build_info.h"
#include "tenferro/base/function_ref.h"
#include "tenferro/base/ids.h"
#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/sha256.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
