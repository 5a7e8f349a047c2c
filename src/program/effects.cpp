// EffectSet, AliasDecl and PlacementConstraint helpers.
#include "tenferro/program/effects.h"

#include <algorithm>

#include <fmt/format.h>

#include "hashing.h"

namespace tenferro::program {

std::string_view to_string(ResourceKind kind) noexcept {
  switch (kind) {
    case ResourceKind::kRandomState:
      return "random_state";
    case ResourceKind::kHostCallback:
      return "host_callback";
    case ResourceKind::kExternalBuffer:
      return "external_buffer";
    case ResourceKind::kCommunicator:
      return "communicator";
    case ResourceKind::kUser:
      return "user";
  }
  return "?";
}

std::string_view to_string(EffectAccess access) noexcept {
  switch (access) {
    case EffectAccess::kRead:
      return "read";
    case EffectAccess::kWrite:
      return "write";
    case EffectAccess::kReadWrite:
      return "read_write";
  }
  return "?";
}

EffectSet::EffectSet(std::initializer_list<Effect> effects) {
  for (const Effect& e : effects) add(e);
}

void EffectSet::add(Effect effect) {
  auto it = std::lower_bound(effects_.begin(), effects_.end(), effect.resource,
                             [](const Effect& e, const ResourceId& r) { return e.resource < r; });
  if (it != effects_.end() && it->resource == effect.resource) {
    it->access = static_cast<EffectAccess>(static_cast<int>(it->access) | static_cast<int>(effect.access));
    return;
  }
  effects_.insert(it, effect);
}

void EffectSet::add_all(const EffectSet& other) {
  for (const Effect& e : other) add(e);
}

std::uint64_t EffectSet::hash() const noexcept {
  std::uint64_t h = internal::hash_combine(0xeffec7ULL, effects_.size());
  for (const Effect& e : effects_) {
    h = internal::hash_combine(h, static_cast<std::uint64_t>(e.resource.kind));
    h = internal::hash_combine(h, e.resource.id);
    h = internal::hash_combine(h, static_cast<std::uint64_t>(e.access));
  }
  return h;
}

std::string EffectSet::to_string() const {
  if (is_pure()) return "pure";
  std::string out = "{";
  for (std::size_t i = 0; i < effects_.size(); ++i) {
    const Effect& e = effects_[i];
    out += fmt::format("{}{} {}:{}", i ? ", " : "", program::to_string(e.access), program::to_string(e.resource.kind),
                       e.resource.id);
  }
  return out + "}";
}

std::string_view to_string(AliasKind kind) noexcept {
  switch (kind) {
    case AliasKind::kFresh:
      return "fresh";
    case AliasKind::kViewOf:
      return "view_of";
    case AliasKind::kMustAlias:
      return "must_alias";
    case AliasKind::kExternalAlias:
      return "external";
  }
  return "?";
}

std::uint64_t AliasDecl::hash() const noexcept {
  std::uint64_t h = internal::hash_combine(0xa11a5ULL, static_cast<std::uint64_t>(kind));
  if (kind == AliasKind::kViewOf || kind == AliasKind::kMustAlias) h = internal::hash_combine(h, operand);
  if (kind == AliasKind::kExternalAlias) {
    h = internal::hash_combine(h, static_cast<std::uint64_t>(resource.kind));
    h = internal::hash_combine(h, resource.id);
  }
  return h;
}

std::string AliasDecl::to_string() const {
  switch (kind) {
    case AliasKind::kFresh:
      return "fresh";
    case AliasKind::kViewOf:
      return fmt::format("view_of({})", operand);
    case AliasKind::kMustAlias:
      return fmt::format("must_alias({})", operand);
    case AliasKind::kExternalAlias:
      return fmt::format("external({}:{})", program::to_string(resource.kind), resource.id);
  }
  return "?";
}

std::string_view to_string(PlacementClass placement) noexcept {
  switch (placement) {
    case PlacementClass::kAny:
      return "any";
    case PlacementClass::kHost:
      return "host";
    case PlacementClass::kDevice:
      return "device";
  }
  return "?";
}

std::uint64_t PlacementConstraint::hash() const noexcept {
  return internal::hash_combine(static_cast<std::uint64_t>(where), colocation_group);
}

std::string PlacementConstraint::to_string() const {
  if (colocation_group == 0) return std::string(program::to_string(where));
  return fmt::format("{} group {}", program::to_string(where), colocation_group);
}

}  // namespace tenferro::program
