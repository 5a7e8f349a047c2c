// Umbrella header of the test-only support library tenferro::testing (built
// only with TENFERRO_BUILD_TESTS): the reference evaluator and tensor checks.
#pragma once

#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"
