// Strongly typed identities. Each id is its own type, so a DeviceId can never
// be passed where an EngineId is expected (checked at compile time).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

#include <fmt/format.h>

namespace tenferro {

/// A 64-bit identity tagged with `Tag`. Value 0 is reserved for "invalid".
/// Trivially copyable; thread-safe as a value.
template <class Tag>
class StrongId {
 public:
  constexpr StrongId() noexcept = default;
  constexpr explicit StrongId(std::uint64_t value) noexcept : value_(value) {}

  constexpr std::uint64_t value() const noexcept { return value_; }
  constexpr bool valid() const noexcept { return value_ != 0; }
  constexpr explicit operator bool() const noexcept { return valid(); }

  friend constexpr bool operator==(StrongId, StrongId) noexcept = default;
  friend constexpr auto operator<=>(StrongId, StrongId) noexcept = default;

 private:
  std::uint64_t value_ = 0;
};

using RuntimeId = StrongId<struct RuntimeIdTag>;
using EngineId = StrongId<struct EngineIdTag>;
using StorageDomainId = StrongId<struct StorageDomainIdTag>;
using AllocationDomainId = StrongId<struct AllocationDomainIdTag>;
using EventDomainId = StrongId<struct EventDomainIdTag>;
using CpuDomainId = StrongId<struct CpuDomainIdTag>;
using DeviceId = StrongId<struct DeviceIdTag>;

/// The storage domain of ordinary host memory: every CPU allocation domain
/// (NUMA node pool) shares this address space.
inline constexpr StorageDomainId kHostStorageDomain{1};
/// The allocation domain of tenferro's default aligned host allocator.
inline constexpr AllocationDomainId kDefaultHostAllocationDomain{1};
/// The allocation domain of memory adopted from the caller with a deleter.
inline constexpr AllocationDomainId kAdoptedHostAllocationDomain{2};

/// A process-unique, never-zero number for identities that must not collide
/// across objects (runtimes, builders, allocation pools). Thread-safe.
///
/// Note [The unique-id counter] This atomic counter is the only mutable
/// process-wide state in tenferro. It carries no configuration: two runtimes
/// drawing ids from it stay fully independent, as the MPI rank model needs.
std::uint64_t next_unique_id() noexcept;

}  // namespace tenferro

template <class Tag>
struct std::hash<tenferro::StrongId<Tag>> {
  std::size_t operator()(tenferro::StrongId<Tag> id) const noexcept { return std::hash<std::uint64_t>()(id.value()); }
};

template <class Tag>
struct fmt::formatter<tenferro::StrongId<Tag>> : fmt::formatter<std::uint64_t> {
  auto format(tenferro::StrongId<Tag> id, format_context& ctx) const {
    return fmt::formatter<std::uint64_t>::format(id.value(), ctx);
  }
};
