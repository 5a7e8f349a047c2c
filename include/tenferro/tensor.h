// Umbrella header of the tensor component.
#pragma once

#include "tenferro/tensor/dtype.h"
#include "tenferro/tensor/host_interop.h"
#include "tenferro/tensor/scalar.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/storage.h"
#include "tenferro/tensor/tensor.h"
