// ScopedCpuIsaEnv: sets (or unsets) TENFERRO_CPU_ISA for one test and
// restores the previous value, so tests of the ISA cap (Note [ISA cap] in
// tenferro/cpu/cpu_isa.h) and tests that expect the uncapped choice run the
// same under any outer setting. Test binaries run their tests one at a time.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "tenferro/cpu/cpu_isa.h"

namespace tenferro::cpu::testing {

class ScopedCpuIsaEnv {
 public:
  /// value == nullptr unsets the variable.
  explicit ScopedCpuIsaEnv(const char* value) {
    if (const char* old = std::getenv(name_.c_str()); old != nullptr) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name_.c_str());
    } else {
      ::setenv(name_.c_str(), value, 1);
    }
  }
  ~ScopedCpuIsaEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedCpuIsaEnv(const ScopedCpuIsaEnv&) = delete;
  ScopedCpuIsaEnv& operator=(const ScopedCpuIsaEnv&) = delete;

 private:
  std::string name_{kCpuIsaEnv};
  std::optional<std::string> old_;
};

}  // namespace tenferro::cpu::testing
