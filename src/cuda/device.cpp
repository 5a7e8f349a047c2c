// Device discovery over the CUDA runtime API (Note [CUDA runtime without a
// driver] in docs/cuda.md).
#include "tenferro/cuda/device.h"

#include <cuda_runtime_api.h>

#include <array>

namespace tenferro::cuda {

namespace {

Error runtime_error(cudaError_t e, std::string_view call, std::string_view expected) {
  return make_error(ErrorCode::kUnavailable, ErrorStage::kConfiguration, "CUDA: expected {} from {}, found {}: {}",
                    expected, call, cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace

int runtime_version() noexcept {
  int version = 0;
  return cudaRuntimeGetVersion(&version) == cudaSuccess ? version : 0;
}

Result<int> driver_version() {
  int version = 0;
  const cudaError_t e = cudaDriverGetVersion(&version);
  if (e != cudaSuccess) return runtime_error(e, "cudaDriverGetVersion", "the driver's version");
  if (version == 0) {
    return make_error(ErrorCode::kUnavailable, ErrorStage::kConfiguration,
                      "CUDA: expected a driver from cudaDriverGetVersion, found none installed");
  }
  return version;
}

Result<std::vector<DeviceInfo>> query_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    // The failure is also the runtime's "last error"; clear it so that code
    // checking cudaGetLastError later does not see ours (without a driver
    // every call fails the same way, so there is nothing to clear).
    (void)cudaGetLastError();
    return runtime_error(e, "cudaGetDeviceCount", "at least one device");
  }
  std::vector<DeviceInfo> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (const cudaError_t pe = cudaGetDeviceProperties(&prop, d); pe != cudaSuccess) {
      return runtime_error(pe, "cudaGetDeviceProperties", "the properties of device " + std::to_string(d));
    }
    std::array<char, 32> bus{};
    if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), d) != cudaSuccess) bus[0] = '\0';
    out.push_back(DeviceInfo{d, prop.name, bus.data(), static_cast<std::int64_t>(prop.totalGlobalMem), prop.major,
                             prop.minor, prop.multiProcessorCount});
  }
  return out;
}

}  // namespace tenferro::cuda
