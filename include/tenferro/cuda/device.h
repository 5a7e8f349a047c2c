// The CUDA devices this process can use, as the CUDA runtime reports them.
//
// tenferro::cuda links the CUDA runtime (libcudart), which loads without a
// driver: on a machine with no GPU or no driver every query returns the
// runtime's own error as a typed kUnavailable instead of failing to load.
// Nothing here keeps state between calls; the CUDA runtime's per-process
// state is its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tenferro/base/status.h"

namespace tenferro::cuda {

struct DeviceInfo {
  int ordinal = 0;  ///< the CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;
  std::string pci_bus_id;  ///< "0000:3b:00.0"
  std::int64_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
};

/// The CUDA runtime version tenferro was linked against (e.g. 13000 for
/// 13.0); needs no driver.
int runtime_version() noexcept;

/// The installed driver's CUDA version; kUnavailable (with the runtime's
/// message) when no driver is loaded.
Result<int> driver_version();

/// Every visible device. kUnavailable, carrying the runtime's error name and
/// message ("cudaErrorNoDevice: no CUDA-capable device is detected", or the
/// insufficient-driver error), when there is none.
Result<std::vector<DeviceInfo>> query_devices();

}  // namespace tenferro::cuda
