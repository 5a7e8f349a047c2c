// Test support for the CPU domain tests: the checked-in hwloc topology
// fixtures (src/cpu/domains/testdata), loading a topology, and a job one
// can wait for.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/cpu/domains/topology.h"

namespace tenferro::cpu::testing {

inline std::string topology_fixture(const char* name) {
  return std::string(TENFERRO_SOURCE_DIR) + "/src/cpu/domains/testdata/" + name;
}

/// The topology `source` describes; a failure is a test failure.
inline CpuTopology load_topology(TopologySource source) {
  auto topo = CpuTopology::discover(source);
  EXPECT_TRUE(topo.ok()) << topo.status().to_string();
  return std::move(topo).value();
}

/// A submitted job that runs `fn` (nothing when null) and records its
/// completions; wait() blocks until the first.
class WaitableJob : public CpuDomainJob {
 public:
  explicit WaitableJob(std::function<Status(const CpuExecutionContext&)> fn = nullptr) : fn_(std::move(fn)) {}
  Status run(const CpuExecutionContext& context) override { return fn_ ? fn_(context) : ok_status(); }
  void complete(Status status) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = std::move(status);
    ++completions_;
    cv_.notify_all();
  }
  Status wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return completions_ > 0; });
    return status_;
  }
  int completions() {
    std::lock_guard<std::mutex> lock(mutex_);
    return completions_;
  }

 private:
  std::function<Status(const CpuExecutionContext&)> fn_;
  std::mutex mutex_;
  std::condition_variable cv_;
  Status status_;
  int completions_ = 0;
};

}  // namespace tenferro::cpu::testing
