// Placement: where work should run, as a caller states it (any engine, one
// engine, a CPU resource domain, a GPU device), and ResolvedPlacement, the
// engine and domain the runtime chose for it.
#pragma once

#include <cstdint>
#include <string>

#include "tenferro/base/ids.h"

namespace tenferro::runtime {

/// A caller's placement request. Trivially copyable value.
class Placement {
 public:
  enum class Kind : std::uint8_t {
    kDefault,    ///< the runtime's default engine and its default domain
    kEngine,     ///< one engine, its default domain
    kCpuDomain,  ///< one CPU resource domain (of the engine that owns it)
    kDevice,     ///< one GPU device (of the engine that owns it)
  };

  constexpr Placement() noexcept = default;
  static constexpr Placement default_placement() noexcept { return {}; }
  static constexpr Placement engine(EngineId id) noexcept { return {Kind::kEngine, id, 0}; }
  /// A CPU domain; `engine` disambiguates when several engines own domains.
  static constexpr Placement cpu_domain(CpuDomainId domain, EngineId engine = {}) noexcept {
    return {Kind::kCpuDomain, engine, domain.value()};
  }
  static constexpr Placement device(DeviceId device, EngineId engine = {}) noexcept {
    return {Kind::kDevice, engine, device.value()};
  }

  constexpr Kind kind() const noexcept { return kind_; }
  /// The requested engine (invalid when any engine may serve).
  constexpr EngineId engine_id() const noexcept { return engine_; }
  /// Precondition: kind() == kCpuDomain.
  constexpr CpuDomainId cpu_domain_id() const noexcept { return CpuDomainId(domain_); }
  /// Precondition: kind() == kDevice.
  constexpr DeviceId device_id() const noexcept { return DeviceId(domain_); }

  friend constexpr bool operator==(Placement, Placement) noexcept = default;
  std::string to_string() const;

 private:
  constexpr Placement(Kind kind, EngineId engine, std::uint64_t domain) noexcept
      : kind_(kind), engine_(engine), domain_(domain) {}
  Kind kind_ = Kind::kDefault;
  EngineId engine_;
  std::uint64_t domain_ = 0;
};

/// The engine and domain chosen for a placement. `domain` is the CPU domain
/// or device id within the engine (0 when the engine has a single domain).
/// Trivially copyable value.
struct ResolvedPlacement {
  EngineId engine;
  std::uint64_t domain = 0;

  friend constexpr bool operator==(ResolvedPlacement, ResolvedPlacement) noexcept = default;
};

}  // namespace tenferro::runtime
