// Effects, alias declarations and placement constraints of semantic
// operations.
//
// Note [Effects and ordering]
// An effect is observable state beyond returned values: random-number state,
// a host callback, an external mutable buffer, a communicator. Each effect
// names a typed resource and an access (read, write or both). A pure
// operation has the empty set. The builder orders effectful operations per
// resource in program order (a write waits for the previous write and the
// reads since; a read waits for the previous write); these edges are exposed
// as OperationView::ordered_after() and are part of the program's identity.
// Operations on different resources stay unordered, so they may run
// concurrently.
//
// Note [Alias declarations]
// Each result declares how it may share memory:
//  - Fresh: a new value (the buffer planner may still reuse a dead buffer);
//  - ViewOf(k): may be a view of operand k (core transpose/reshape/...);
//  - MustAlias(k): *is* operand k updated in place; the operand value must
//    have no other use and must not be a program input or output;
//  - ExternalAlias(r): aliases external state r; the op must declare an
//    effect on r.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>

#include "tenferro/base/small_vector.h"

namespace tenferro::program {

/// The kind of state an effect touches.
enum class ResourceKind : std::uint8_t {
  kRandomState,     ///< a random-number generator state
  kHostCallback,    ///< a host callback with observable side effects
  kExternalBuffer,  ///< a mutable buffer owned outside the program
  kCommunicator,    ///< a collective communicator
  kUser,            ///< anything else an extension defines
};
std::string_view to_string(ResourceKind kind) noexcept;

/// A typed resource identity: (kind, id). The id is chosen by whoever
/// defines the resource (e.g. a stable hash of a name). Trivial value type.
struct ResourceId {
  ResourceKind kind = ResourceKind::kUser;
  std::uint64_t id = 0;

  friend constexpr bool operator==(ResourceId, ResourceId) noexcept = default;
  friend constexpr auto operator<=>(ResourceId, ResourceId) noexcept = default;
};

/// Read, write, or both.
enum class EffectAccess : std::uint8_t { kRead = 1, kWrite = 2, kReadWrite = 3 };
std::string_view to_string(EffectAccess access) noexcept;

/// One resource touched with one access.
struct Effect {
  ResourceId resource;
  EffectAccess access = EffectAccess::kRead;

  bool writes() const noexcept { return (static_cast<int>(access) & 2) != 0; }
  friend constexpr bool operator==(const Effect&, const Effect&) noexcept = default;
};

/// A set of effects, one per resource (adding a second access to the same
/// resource merges them), sorted by resource. Empty = pure. Value type.
class EffectSet {
 public:
  EffectSet() = default;
  EffectSet(std::initializer_list<Effect> effects);

  static EffectSet pure() { return EffectSet(); }
  void add(Effect effect);
  void add_all(const EffectSet& other);

  bool is_pure() const noexcept { return effects_.empty(); }
  std::size_t size() const noexcept { return effects_.size(); }
  std::span<const Effect> effects() const noexcept { return effects_.span(); }
  const Effect* begin() const noexcept { return effects_.begin(); }
  const Effect* end() const noexcept { return effects_.end(); }
  std::uint64_t hash() const noexcept;
  /// "pure" or "{write random_state:7, read host_callback:3}".
  std::string to_string() const;

  friend bool operator==(const EffectSet& a, const EffectSet& b) noexcept { return a.effects_ == b.effects_; }

 private:
  SmallVector<Effect, 1> effects_;
};

/// Note [Alias declarations].
enum class AliasKind : std::uint8_t { kFresh, kViewOf, kMustAlias, kExternalAlias };
std::string_view to_string(AliasKind kind) noexcept;

/// The alias declaration of one result. Trivial value type.
struct AliasDecl {
  AliasKind kind = AliasKind::kFresh;
  std::uint32_t operand = 0;  ///< for kViewOf / kMustAlias
  ResourceId resource;        ///< for kExternalAlias

  static constexpr AliasDecl fresh() noexcept { return {}; }
  static constexpr AliasDecl view_of(std::uint32_t operand) noexcept { return {AliasKind::kViewOf, operand, {}}; }
  static constexpr AliasDecl must_alias(std::uint32_t operand) noexcept { return {AliasKind::kMustAlias, operand, {}}; }
  static constexpr AliasDecl external(ResourceId resource) noexcept { return {AliasKind::kExternalAlias, 0, resource}; }
  std::uint64_t hash() const noexcept;
  /// "fresh", "view_of(0)", "must_alias(1)", "external(external_buffer:4)".
  std::string to_string() const;

  friend constexpr bool operator==(const AliasDecl& a, const AliasDecl& b) noexcept {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
      case AliasKind::kFresh:
        return true;
      case AliasKind::kViewOf:
      case AliasKind::kMustAlias:
        return a.operand == b.operand;
      case AliasKind::kExternalAlias:
        return a.resource == b.resource;
    }
    return false;
  }
};

/// Where an operation may run: a requirement, never a resolved device (the
/// runtime resolves placement). Trivial value type.
enum class PlacementClass : std::uint8_t {
  kAny,     ///< no constraint
  kHost,    ///< must run on a host (CPU) engine
  kDevice,  ///< must run on an accelerator engine
};
std::string_view to_string(PlacementClass placement) noexcept;

struct PlacementConstraint {
  PlacementClass where = PlacementClass::kAny;
  /// Operations sharing a non-zero group must be placed on the same engine.
  std::uint32_t colocation_group = 0;

  bool is_unconstrained() const noexcept { return where == PlacementClass::kAny && colocation_group == 0; }
  std::uint64_t hash() const noexcept;
  /// "any", "host", "device group 2".
  std::string to_string() const;
  friend constexpr bool operator==(const PlacementConstraint&, const PlacementConstraint&) noexcept = default;
};

}  // namespace tenferro::program
