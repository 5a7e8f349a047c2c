// Test-only: a runtime for the linalg AD tests. Engine 1 runs every core op
// through the reference evaluator (tenferro::testing, one single-op program
// per call; the pattern of the ad component's test engine, which is private
// to its tests) and has the linalg extension module installed, so JVP/VJP
// programs mixing core ops and linalg ops run through Runtime::prepare_for
// and the native linalg engine until the CPU engine registration exists.
#pragma once

#include <memory>

#include "tenferro/base/status.h"
#include "tenferro/linalg/cpu_engine.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::linalg::testing {

Result<runtime::Runtime> make_reference_runtime(std::shared_ptr<CpuLinalgEngine> linalg);

}  // namespace tenferro::linalg::testing
