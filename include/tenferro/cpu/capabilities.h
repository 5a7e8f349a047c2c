// The two independent CPU resource-capability axes of a provider: thread count
// and placement. Every CPU provider reports both once, at construction, from
// what it can actually enforce; resource domains validate strict placement
// against them at prepare time.
#pragma once

#include <cstdint>
#include <string>

namespace tenferro::cpu {

/// Can the provider enforce the execution thread budget for one call?
enum class ThreadCountControl : std::uint8_t {
  kSequential,            ///< never uses more than the calling thread (serial build, native kernels in a job)
  kPerCall,               ///< any budget N per call (native kernels on engine workers, BLIS rntm_t)
  kBinaryClampToOne,      ///< can force exactly one thread per call, nothing else
  kGlobalOrUncontrolled,  ///< process-global or unknown (parallel OpenBLAS, MKL global)
};

/// Are all workers used by a call confined to the selected domain's CpuSet?
enum class PlacementControl : std::uint8_t {
  kCallingThread,    ///< runs inline on the (pinned) calling thread
  kEngineWorkers,    ///< runs on engine-supplied, pinned domain workers: exact
  kExternalWorkers,  ///< the provider's own threads: not exact per domain
};

/// A provider's probed capability, fixed for its lifetime.
struct ProviderCapability {
  ThreadCountControl thread_count = ThreadCountControl::kSequential;
  PlacementControl placement = PlacementControl::kCallingThread;
  /// Free text for diagnostics, e.g. "OpenBLAS 0.3.21 pthread (openblas_get_parallel()=1)".
  std::string detail;
};

}  // namespace tenferro::cpu
