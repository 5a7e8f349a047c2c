// RuntimeConfigBuilder validation and RuntimeConfig snapshots (Note
// [Configuration snapshots and epochs]).
#include "tenferro/runtime/config.h"

#include "tenferro/runtime/spi/collective.h"
#include "tenferro/runtime/spi/extension.h"
#include "tenferro/runtime/spi/providers.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace tenferro::runtime {
namespace {

Error config_error(ErrorCode code, std::string message) {
  return Error(code, ErrorStage::kConfiguration, std::move(message));
}

bool same_objects(const EngineRegistration& a, const EngineRegistration& b) {
  const CoreCapabilities& x = a.capabilities;
  const CoreCapabilities& y = b.capabilities;
  return a.metadata.id == b.metadata.id && a.metadata.name == b.metadata.name &&
         a.metadata.hardware == b.metadata.hardware && a.metadata.storage == b.metadata.storage &&
         a.metadata.domains == b.metadata.domains && a.metadata.default_domain == b.metadata.default_domain &&
         x.elementwise == y.elementwise && x.reduction == y.reduction && x.indexing == y.indexing &&
         x.dot_general == y.dot_general && x.layout == y.layout && x.subgraph == y.subgraph &&
         a.executor == b.executor && a.event_driver == b.event_driver && a.allocator == b.allocator &&
         a.cache_owner == b.cache_owner;
}

}  // namespace

std::string_view to_string(HardwareClass hardware) noexcept {
  switch (hardware) {
    case HardwareClass::kCpu:
      return "cpu";
    case HardwareClass::kGpu:
      return "gpu";
    case HardwareClass::kCompiler:
      return "compiler";
    case HardwareClass::kReference:
      return "reference";
  }
  return "unknown";
}

std::string_view to_string(Determinism determinism) noexcept {
  return determinism == Determinism::kFast ? "fast" : "reproducible";
}

std::string_view to_string(OpFamily family) noexcept {
  switch (family) {
    case OpFamily::kElementwise:
      return "elementwise";
    case OpFamily::kReduction:
      return "reduction";
    case OpFamily::kIndexing:
      return "indexing";
    case OpFamily::kDotGeneral:
      return "dot_general";
    case OpFamily::kLayout:
      return "layout";
    case OpFamily::kView:
      return "view";
    case OpFamily::kExtension:
      return "extension";
  }
  return "unknown";
}

std::string TransferEndpoint::to_string() const { return fmt::format("(engine {}, storage {})", engine, storage); }

bool EngineEntry::serves(std::uint64_t domain) const noexcept {
  const auto& domains = registration.metadata.domains;
  if (domains.empty()) return domain == 0;
  return std::find(domains.begin(), domains.end(), domain) != domains.end();
}

// ---------------------------------------------------------------------------
// RuntimeConfig

const EngineEntry* RuntimeConfig::find_engine(EngineId id) const noexcept {
  for (const EngineEntry& e : engines_)
    if (e.id() == id) return &e;
  return nullptr;
}

const EngineEntry* RuntimeConfig::default_engine() const noexcept {
  if (policies_.default_engine.valid()) return find_engine(policies_.default_engine);
  return engines_.empty() ? nullptr : &engines_.front();
}

const ExtensionRegistration* RuntimeConfig::find_extension(std::string_view family_id, EngineId engine) const noexcept {
  for (const ExtensionRegistration& r : extensions_)
    if (r.engine == engine && r.family_id == family_id) return &r;
  return nullptr;
}

const CollectiveProvider* RuntimeConfig::find_collective(std::uint64_t communicator) const noexcept {
  for (const CollectiveRegistration& c : collectives_)
    if (c.communicator == communicator) return c.provider.get();
  return nullptr;
}

TransferProvider* RuntimeConfig::find_transfer(TransferEndpoint source, TransferEndpoint destination) const noexcept {
  for (const TransferRegistration& r : transfers_)
    if (r.source == source && r.destination == destination) return r.provider.get();
  return nullptr;
}

std::string RuntimeConfig::describe() const {
  std::string out = fmt::format("runtime {} epoch {}\n", runtime_id_, epoch_);
  for (const EngineEntry& e : engines_) {
    const EngineMetadata& m = e.metadata();
    const CoreCapabilities& c = e.registration.capabilities;
    std::string slots;
    auto add = [&](bool present, std::string_view name) {
      if (!present) return;
      if (!slots.empty()) slots += ", ";
      slots += name;
    };
    add(c.elementwise != nullptr, "elementwise");
    add(c.reduction != nullptr, "reduction");
    add(c.indexing != nullptr, "indexing");
    add(c.dot_general != nullptr, "dot_general");
    add(c.layout != nullptr, "layout");
    add(c.subgraph != nullptr, "subgraph");
    out += fmt::format("  engine {} '{}' ({}, storage {}, event domain {}{}): slots [{}]\n", m.id, m.name,
                       to_string(m.hardware), m.storage, e.event_domain,
                       e.registration.executable() ? "" : ", preparation-only", slots);
  }
  for (const ExtensionRegistration& r : extensions_)
    out += fmt::format("  extension '{}' on engine {}\n", r.family_id, r.engine);
  for (const TransferRegistration& t : transfers_)
    out += fmt::format("  transfer {} -> {}\n", t.source.to_string(), t.destination.to_string());
  for (const CollectiveRegistration& c : collectives_)
    out += fmt::format("  collective communicator {}: {}\n", c.communicator, c.provider->name());
  out += fmt::format("  determinism {}, plan cache <= {} entries / {} bytes\n", to_string(policies_.determinism),
                     policies_.plan_cache.max_entries, policies_.plan_cache.max_bytes);
  if (policies_.fallback_engine.valid()) out += fmt::format("  fallback engine {}\n", policies_.fallback_engine);
  for (const ResourceAmount& c : policies_.capacities)
    out += fmt::format("  capacity {} = {}\n", c.key.to_string(), c.amount);
  return out;
}

// ---------------------------------------------------------------------------
// RuntimeConfigBuilder

RuntimeConfigBuilder::RuntimeConfigBuilder(const RuntimeConfig& snapshot)
    : engines_(snapshot.engines_),
      extensions_(snapshot.extensions_),
      transfers_(snapshot.transfers_),
      collectives_(snapshot.collectives_),
      policies_(snapshot.policies_),
      arbiter_(snapshot.arbiter_),
      arbiter_capacities_(snapshot.policies_.capacities),
      arbiter_injected_(snapshot.arbiter_injected_) {}

Status RuntimeConfigBuilder::add_engine(EngineRegistration registration) {
  const EngineId id = registration.metadata.id;
  if (!id.valid()) return config_error(ErrorCode::kInvalidArgument, "expected a valid (non-zero) engine id, found 0");
  for (const EngineEntry& e : engines_) {
    if (e.id() != id) continue;
    if (same_objects(e.registration, registration)) return ok_status();
    return config_error(ErrorCode::kAlreadyExists,
                        fmt::format("expected a new engine id, found engine {} ('{}') already registered with "
                                    "other objects; use replace_engine",
                                    id, e.metadata().name));
  }
  engines_.push_back(EngineEntry{std::move(registration), EventDomainId(next_unique_id()), nullptr});
  return ok_status();
}

Status RuntimeConfigBuilder::replace_engine(EngineRegistration registration) {
  for (EngineEntry& e : engines_) {
    if (e.id() != registration.metadata.id) continue;
    e = EngineEntry{std::move(registration), EventDomainId(next_unique_id()), nullptr};
    return ok_status();
  }
  return config_error(ErrorCode::kNotFound,
                      fmt::format("expected a registered engine {} to replace, found none", registration.metadata.id));
}

Status RuntimeConfigBuilder::remove_engine(EngineId id) {
  auto it = std::find_if(engines_.begin(), engines_.end(), [&](const EngineEntry& e) { return e.id() == id; });
  if (it == engines_.end())
    return config_error(ErrorCode::kNotFound, fmt::format("expected a registered engine {}, found none", id));
  engines_.erase(it);
  std::erase_if(extensions_, [&](const ExtensionRegistration& r) { return r.engine == id; });
  std::erase_if(transfers_,
                [&](const TransferRegistration& t) { return t.source.engine == id || t.destination.engine == id; });
  return ok_status();
}

Status RuntimeConfigBuilder::add_extension(ExtensionRegistration registration) {
  if (registration.family_id.empty() || registration.implementation == nullptr) {
    return config_error(ErrorCode::kInvalidArgument,
                        "expected an extension registration with a family id and an implementation, found an "
                        "empty one");
  }
  for (const ExtensionRegistration& r : extensions_) {
    if (r.family_id != registration.family_id || r.engine != registration.engine) continue;
    if (r.implementation == registration.implementation) return ok_status();
    return config_error(ErrorCode::kAlreadyExists,
                        fmt::format("expected one extension engine per (family, engine), found '{}' on engine {} "
                                    "already registered; use replace_extension",
                                    r.family_id, r.engine));
  }
  extensions_.push_back(std::move(registration));
  return ok_status();
}

Status RuntimeConfigBuilder::add_extension_module(const ExtensionModule& module) {
  std::vector<ExtensionRegistration> saved = extensions_;
  for (const ExtensionRegistration& r : module.registrations) {
    Status s = add_extension(r);
    if (!s.ok()) {
      extensions_ = std::move(saved);
      return s.with_context(fmt::format("installing extension module '{}'", module.name), ErrorStage::kConfiguration);
    }
  }
  return ok_status();
}

Status RuntimeConfigBuilder::replace_extension(ExtensionRegistration registration) {
  for (ExtensionRegistration& r : extensions_) {
    if (r.family_id != registration.family_id || r.engine != registration.engine) continue;
    if (registration.implementation == nullptr)
      return config_error(ErrorCode::kInvalidArgument, "expected an extension implementation, found null");
    r = std::move(registration);
    return ok_status();
  }
  return config_error(ErrorCode::kNotFound,
                      fmt::format("expected a registered extension '{}' on engine {} to replace, found none",
                                  registration.family_id, registration.engine));
}

Status RuntimeConfigBuilder::add_transfer(TransferRegistration registration) {
  if (registration.provider == nullptr)
    return config_error(ErrorCode::kInvalidArgument, "expected a transfer provider, found null");
  for (const TransferRegistration& t : transfers_) {
    if (t.source != registration.source || t.destination != registration.destination) continue;
    if (t.provider == registration.provider) return ok_status();
    return config_error(ErrorCode::kAlreadyExists,
                        fmt::format("expected one transfer provider per endpoint pair, found {} -> {} already "
                                    "registered; use replace_transfer",
                                    t.source.to_string(), t.destination.to_string()));
  }
  transfers_.push_back(std::move(registration));
  return ok_status();
}

Status RuntimeConfigBuilder::replace_transfer(TransferRegistration registration) {
  for (TransferRegistration& t : transfers_) {
    if (t.source != registration.source || t.destination != registration.destination) continue;
    if (registration.provider == nullptr)
      return config_error(ErrorCode::kInvalidArgument, "expected a transfer provider, found null");
    t = std::move(registration);
    return ok_status();
  }
  return config_error(ErrorCode::kNotFound,
                      fmt::format("expected a registered transfer {} -> {} to replace, found none",
                                  registration.source.to_string(), registration.destination.to_string()));
}

Status RuntimeConfigBuilder::add_collective(CollectiveRegistration registration) {
  if (registration.provider == nullptr) {
    return config_error(ErrorCode::kInvalidArgument,
                        fmt::format("collective provider of communicator {}: expected a provider, found null",
                                    registration.communicator));
  }
  for (const CollectiveRegistration& c : collectives_) {
    if (c.communicator != registration.communicator) continue;
    if (c.provider == registration.provider) return ok_status();
    return config_error(ErrorCode::kAlreadyExists,
                        fmt::format("communicator {}: expected one collective provider, found '{}' already registered",
                                    registration.communicator, c.provider->name()));
  }
  collectives_.push_back(std::move(registration));
  return ok_status();
}

Status RuntimeConfigBuilder::remove_collective(std::uint64_t communicator) {
  for (auto it = collectives_.begin(); it != collectives_.end(); ++it) {
    if (it->communicator != communicator) continue;
    collectives_.erase(it);
    return ok_status();
  }
  return config_error(ErrorCode::kNotFound,
                      fmt::format("expected a collective provider for communicator {}, found none", communicator));
}

Status RuntimeConfigBuilder::validate() const {
  if (engines_.empty()) return config_error(ErrorCode::kInvalidArgument, "expected at least one engine, found none");
  auto find = [&](EngineId id) -> const EngineEntry* {
    for (const EngineEntry& e : engines_)
      if (e.id() == id) return &e;
    return nullptr;
  };
  for (const EngineEntry& e : engines_) {
    const EngineRegistration& r = e.registration;
    const EngineMetadata& m = r.metadata;
    if ((r.executor == nullptr) != (r.event_driver == nullptr)) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("engine {} ('{}'): expected both an executor and an event-domain driver "
                                      "(executable) or neither (preparation-only), found only one",
                                      m.id, m.name));
    }
    if (r.allocator == nullptr && m.storage != kHostStorageDomain && r.executable()) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("engine {} ('{}'): storage class {} is not host memory, so it needs an "
                                      "allocator; found none",
                                      m.id, m.name, m.storage));
    }
    if (!m.storage.valid()) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("engine {} ('{}'): expected a valid storage class, found 0", m.id, m.name));
    }
    if (!e.serves(m.default_domain)) {
      return config_error(
          ErrorCode::kInvalidArgument,
          fmt::format("engine {} ('{}'): default domain {} is not one of its domains", m.id, m.name, m.default_domain));
    }
  }
  // The execution context identity every provider will check (preparation
  // validates the same identity the provider's one type check relies on).
  auto check_context = [](const EngineEntry& e, ExecutionContextTypeId wanted, std::string_view who) -> Status {
    if (!wanted.valid() || !e.registration.executable()) return ok_status();
    if (wanted == e.registration.executor->context_type()) return ok_status();
    return config_error(ErrorCode::kContractViolation,
                        fmt::format("engine {} ('{}'): {} expects another execution context type than the engine's "
                                    "executor provides",
                                    e.id(), e.metadata().name, who));
  };
  for (const EngineEntry& e : engines_) {
    const CoreCapabilities& c = e.registration.capabilities;
    for (const CoreFamilyRuntime* slot : {static_cast<const CoreFamilyRuntime*>(c.elementwise.get()),
                                          static_cast<const CoreFamilyRuntime*>(c.reduction.get()),
                                          static_cast<const CoreFamilyRuntime*>(c.indexing.get()),
                                          static_cast<const CoreFamilyRuntime*>(c.dot_general.get())}) {
      if (slot != nullptr) TENFERRO_TRY(check_context(e, slot->context_type(), slot->name()));
    }
    if (c.layout != nullptr) TENFERRO_TRY(check_context(e, c.layout->context_type(), c.layout->name()));
  }
  for (const ExtensionRegistration& r : extensions_) {
    const EngineEntry* e = find(r.engine);
    if (e == nullptr) {
      return config_error(
          ErrorCode::kNotFound,
          fmt::format("extension '{}': expected engine {} to be registered, found none", r.family_id, r.engine));
    }
    TENFERRO_TRY(check_context(*e, r.implementation->context_type(), r.implementation->name()));
  }
  for (const TransferRegistration& t : transfers_) {
    for (const TransferEndpoint& end : {t.source, t.destination}) {
      const EngineEntry* e = find(end.engine);
      if (e == nullptr) {
        return config_error(ErrorCode::kNotFound,
                            fmt::format("transfer {} -> {}: expected engine {} to be registered, found none",
                                        t.source.to_string(), t.destination.to_string(), end.engine));
      }
      if (e->metadata().storage != end.storage) {
        return config_error(ErrorCode::kInvalidArgument,
                            fmt::format("transfer {} -> {}: endpoint {} names storage class {}, but engine {} "
                                        "computes on storage class {}",
                                        t.source.to_string(), t.destination.to_string(), end.to_string(), end.storage,
                                        end.engine, e->metadata().storage));
      }
    }
    TENFERRO_TRY(check_context(*find(t.destination.engine), t.provider->context_type(), "a transfer provider"));
    if (t.source == t.destination) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("transfer {} -> itself: expected two different endpoints", t.source.to_string()));
    }
  }
  const RuntimePolicies& p = policies_;
  if (p.default_engine.valid() && find(p.default_engine) == nullptr) {
    return config_error(ErrorCode::kNotFound, fmt::format("default engine {} is not registered", p.default_engine));
  }
  if (p.fallback_engine.valid() && find(p.fallback_engine) == nullptr) {
    return config_error(ErrorCode::kNotFound, fmt::format("fallback engine {} is not registered", p.fallback_engine));
  }
  for (const FamilyPreference& pref : p.preferences) {
    if ((pref.family == OpFamily::kExtension) == pref.extension_family.empty()) {
      return config_error(ErrorCode::kInvalidArgument,
                          "expected an extension family name exactly for kExtension preferences");
    }
    for (EngineId id : pref.engines) {
      if (find(id) == nullptr) {
        return config_error(ErrorCode::kNotFound, fmt::format("{} preference names engine {}, which is not registered",
                                                              to_string(pref.family), id));
      }
    }
  }
  std::vector<ResourceAmount> caps = p.capacities;
  for (const ResourceAmount& c : caps) {
    if (c.key.kind == ResourceKind::kExclusive && c.amount != 1) {
      return config_error(
          ErrorCode::kInvalidArgument,
          fmt::format("expected capacity 1 for the exclusivity token {}, found {}", c.key.to_string(), c.amount));
    }
  }
  std::sort(caps.begin(), caps.end(), [](const ResourceAmount& a, const ResourceAmount& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < caps.size(); ++i) {
    if (caps[i].key == caps[i - 1].key) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("expected one capacity per resource, found {} twice", caps[i].key.to_string()));
    }
  }
  return ok_status();
}

Result<std::shared_ptr<const RuntimeConfig>> RuntimeConfigBuilder::build(RuntimeId runtime, std::uint64_t epoch) const {
  TENFERRO_TRY(validate());
  std::shared_ptr<RuntimeConfig> config(new RuntimeConfig());
  config->runtime_id_ = runtime;
  config->epoch_ = epoch;
  config->engines_ = engines_;
  config->extensions_ = extensions_;
  config->transfers_ = transfers_;
  config->collectives_ = collectives_;
  config->policies_ = policies_;
  for (EngineEntry& e : config->engines_) {
    e.allocator = e.registration.allocator != nullptr ? e.registration.allocator : make_host_engine_allocator();
    const EngineMetadata& m = e.metadata();
    if (m.domains.empty()) {
      config->topology_.push_back(TopologyEntry{m.id, m.hardware, m.storage, 0});
    } else {
      for (std::uint64_t d : m.domains) config->topology_.push_back(TopologyEntry{m.id, m.hardware, m.storage, d});
    }
  }
  if (arbiter_injected_) {
    config->arbiter_ = arbiter_;
    config->arbiter_injected_ = true;
  } else if (arbiter_ != nullptr && arbiter_capacities_ == policies_.capacities) {
    config->arbiter_ = arbiter_;
  } else {
    config->arbiter_ = std::make_shared<FifoResourceArbiter>(policies_.capacities);
  }
  return std::shared_ptr<const RuntimeConfig>(std::move(config));
}

}  // namespace tenferro::runtime
