// Device discovery against the CUDA runtime itself. On a machine without a
// GPU or driver the queries must fail typed with the runtime's reason, and
// the tests that need a device skip with that reason.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "tenferro/cuda/device.h"

namespace tenferro::cuda {
namespace {

TEST(CudaDevice, RuntimeVersionIsTheLinkedOneAndNeedsNoDriver) { EXPECT_EQ(runtime_version(), CUDART_VERSION); }

TEST(CudaDevice, QueryReportsTheDevicesOrTheRuntimesReason) {
  int count = 0;
  const cudaError_t direct = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  Result<std::vector<DeviceInfo>> devices = query_devices();
  if (direct != cudaSuccess) {
    ASSERT_FALSE(devices.ok());
    EXPECT_EQ(devices.status().code(), ErrorCode::kUnavailable);
    const std::string message = devices.status().to_string();
    EXPECT_NE(message.find("cudaGetDeviceCount"), std::string::npos) << message;
    EXPECT_NE(message.find(cudaGetErrorName(direct)), std::string::npos) << message;
    // Asking again gives the same answer (no state is kept between calls).
    EXPECT_EQ(query_devices().status().to_string(), message);
    return;
  }
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  ASSERT_EQ(static_cast<int>(devices->size()), count);
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const DeviceInfo& d = (*devices)[i];
    EXPECT_EQ(d.ordinal, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_memory_bytes, 0);
    EXPECT_GE(d.compute_capability_major, 1);
    EXPECT_GT(d.multiprocessors, 0);
  }
}

TEST(CudaDevice, DriverVersionIsKnownWheneverADeviceIs) {
  Result<std::vector<DeviceInfo>> devices = query_devices();
  Result<int> driver = driver_version();
  if (devices.ok()) {
    ASSERT_TRUE(driver.ok()) << driver.status().to_string();
    EXPECT_GT(*driver, 0);
  } else if (!driver.ok()) {
    EXPECT_EQ(driver.status().code(), ErrorCode::kUnavailable) << driver.status().to_string();
  }
}

TEST(CudaDevice, EveryReportedDeviceRoundTripsHostData) {
  Result<std::vector<DeviceInfo>> devices = query_devices();
  if (!devices.ok()) GTEST_SKIP() << devices.status().to_string();
  std::vector<double> host(1 << 17), back(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = 0.5 * static_cast<double>(i);
  for (const DeviceInfo& d : *devices) {
    ASSERT_EQ(cudaSetDevice(d.ordinal), cudaSuccess) << d.name;
    void* device = nullptr;
    ASSERT_EQ(cudaMalloc(&device, host.size() * sizeof(double)), cudaSuccess) << d.name;
    EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(back.data(), device, back.size() * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(cudaFree(device), cudaSuccess);
    EXPECT_EQ(std::memcmp(host.data(), back.data(), host.size() * sizeof(double)), 0) << d.name;
  }
}

}  // namespace
}  // namespace tenferro::cuda
