// AdContext: rules, fallback policy, the transform cache (Note [Transform
// cache]) and the jvp / vjp / split_vjp entry points.
#include "tenferro/ad/ad_context.h"

#include <list>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "tenferro/base/function_ref.h"
#include "transforms.h"

namespace tenferro::ad {

using internal::BuiltTransform;
using internal::RuleTable;
using internal::TransformKind;
using program::FrozenProgram;
using program::ProgramBindings;
using program::SemanticProgram;

std::string_view to_string(TangentState state) noexcept {
  switch (state) {
    case TangentState::kPresent:
      return "present";
    case TangentState::kZero:
      return "zero";
    case TangentState::kNonDifferentiable:
      return "non_differentiable";
  }
  return "?";
}

SmallVector<std::uint32_t, 4> differentiable_inputs(const SemanticProgram& program) {
  SmallVector<std::uint32_t, 4> out;
  for (std::size_t i = 0; i < program.num_inputs(); ++i)
    if (is_inexact(program.metadata(program.input(i)).dtype)) out.push_back(static_cast<std::uint32_t>(i));
  return out;
}

namespace {

struct CacheKey {
  Digest256 fingerprint;
  TransformKind kind = TransformKind::kJvp;
  std::uint64_t option = 0;  // kReuseVjp: the number of differentiated outputs
  SmallVector<std::uint32_t, 4> active;
  std::uint64_t epoch = 0;

  std::uint64_t hash() const noexcept {
    std::uint64_t h = fingerprint.prefix64() ^ (static_cast<std::uint64_t>(kind) * 0x9e3779b97f4a7c15ULL) ^
                      (epoch << 17) ^ (option << 40);
    for (std::uint32_t a : active) h = (h ^ a) * 0x100000001b3ULL;
    return h;
  }
  bool same(const CacheKey& o) const noexcept {
    return kind == o.kind && option == o.option && epoch == o.epoch && fingerprint == o.fingerprint &&
           std::equal(active.begin(), active.end(), o.active.begin(), o.active.end());
  }
};

struct CacheEntry {
  CacheKey key;
  std::shared_ptr<const SemanticProgram> source;  // confirms hits (structurally_equal)
  std::shared_ptr<const BuiltTransform> built;
  std::size_t bytes = 0;
};

std::size_t retained_bytes(const BuiltTransform& built) {
  std::size_t bytes = built.program ? built.program->canonical_form().size() : 0;
  if (built.backward) bytes += built.backward->canonical_form().size();
  return bytes;
}

}  // namespace

namespace internal {

// Bindings for a transformed program whose first `source_inputs` inputs are
// the source's and whose `extra` further inputs are parameters.
Result<ProgramBindings> extend_bindings(const ProgramBindings& source, std::size_t source_inputs, std::size_t extra) {
  if (source.num_inputs() == 0 || source.num_bound() == 0) {
    return ProgramBindings::all_parameters(source_inputs + extra);
  }
  if (source.num_inputs() != source_inputs) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "the program's bindings describe {} inputs, the program has {}", source.num_inputs(),
                      source_inputs);
  }
  // ProgramBindings are made by a builder: replay the binding structure.
  program::ProgramBuilder builder;
  for (std::size_t i = 0; i < source_inputs; ++i) {
    if (const Tensor* bound = source.bound_tensor(i)) {
      TENFERRO_TRY(builder.capture(*bound));
    } else {
      TENFERRO_TRY(builder.add_input(DType::kFloat64, {}));
    }
  }
  for (std::size_t k = 0; k < extra; ++k) TENFERRO_TRY(builder.add_input(DType::kFloat64, {}));
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram frozen, builder.freeze({}));
  return std::move(frozen.bindings);
}

}  // namespace internal

struct AdContext::State {
  mutable std::mutex mutex;
  AdContextOptions options;
  std::shared_ptr<const RuleTable> rules = std::make_shared<RuleTable>();
  std::uint64_t epoch = 1;

  std::list<CacheEntry> lru;  // most recent first
  std::unordered_multimap<std::uint64_t, std::list<CacheEntry>::iterator> index;
  AdCacheStats stats;
  AdMetrics metrics;

  void clear_locked() {
    lru.clear();
    index.clear();
    stats.entries = 0;
    stats.bytes = 0;
  }

  void evict_locked() {
    while (!lru.empty() && (lru.size() > options.cache.max_entries || stats.bytes > options.cache.max_bytes)) {
      auto last = std::prev(lru.end());
      auto range = index.equal_range(last->key.hash());
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second == last) {
          index.erase(it);
          break;
        }
      }
      stats.bytes -= last->bytes;
      lru.erase(last);
      ++stats.evictions;
    }
    stats.entries = lru.size();
  }

  Status set_rule(std::shared_ptr<const ExtensionAdRule> rule, bool replace) {
    if (!rule) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "expected an AD rule, found null");
    }
    std::string family(rule->family_id());
    std::lock_guard lock(mutex);
    if (!replace && rules->find(family) != nullptr) {
      return make_error(ErrorCode::kAlreadyExists, ErrorStage::kConfiguration,
                        "the AdContext already has an AD rule for extension family {}; use replace_rule", family);
    }
    auto next = std::make_shared<RuleTable>(*rules);
    next->rules[family] = std::move(rule);
    rules = std::move(next);
    ++epoch;
    clear_locked();
    return ok_status();
  }

  Result<std::shared_ptr<const BuiltTransform>> transform(TransformKind kind, const FrozenProgram& source,
                                                          std::span<const std::uint32_t> active,
                                                          std::size_t option = SIZE_MAX) {
    return cached(kind, source, active, option,
                  [&](const internal::TransformSetup& setup, internal::TransformCounters& counters) {
                    return internal::build_transform(kind, *source.program, active, setup, counters, option);
                  });
  }

  // The cached transform of (kind, option, source, active), or the one
  // `build` makes (outside the lock) cached.
  Result<std::shared_ptr<const BuiltTransform>> cached(
      TransformKind kind, const FrozenProgram& source, std::span<const std::uint32_t> active, std::size_t option,
      FunctionRef<Result<BuiltTransform>(const internal::TransformSetup&, internal::TransformCounters&)> build) {
    if (!source.program) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "AD transform: expected a program, found null");
    }
    TENFERRO_TRY(internal::check_active_inputs(*source.program, active));
    CacheKey key{source.program->fingerprint().digest, kind, option,
                 SmallVector<std::uint32_t, 4>(active.begin(), active.end()), 0};
    std::shared_ptr<const RuleTable> snapshot;
    internal::TransformSetup setup;
    {
      std::lock_guard lock(mutex);
      key.epoch = epoch;
      auto range = index.equal_range(key.hash());
      for (auto it = range.first; it != range.second; ++it) {
        CacheEntry& entry = *it->second;
        if (!entry.key.same(key)) continue;
        if (entry.source != source.program && !program::structurally_equal(*entry.source, *source.program)) continue;
        lru.splice(lru.begin(), lru, it->second);
        ++stats.hits;
        return entry.built;
      }
      ++stats.misses;
      snapshot = rules;
      setup.fallback = options.fallback;
      setup.expand_nodes = options.expand_nodes;
    }
    setup.rules = snapshot.get();
    internal::TransformCounters counters;
    Result<BuiltTransform> built = build(setup, counters);
    std::lock_guard lock(mutex);
    metrics.direct_vjp_nodes += counters.direct_vjp_nodes;
    metrics.lowering_fallbacks += counters.lowering_fallbacks;
    metrics.expanded_nodes += counters.expanded_nodes;
    metrics.extension_rule_calls += counters.extension_rule_calls;
    if (!built.ok()) return std::move(built).status();
    ++metrics.transforms_built;
    auto shared = std::make_shared<const BuiltTransform>(std::move(*built));
    if (key.epoch == epoch && options.cache.max_entries > 0) {
      CacheEntry entry{std::move(key), source.program, shared, retained_bytes(*shared)};
      const std::uint64_t h = entry.key.hash();
      stats.bytes += entry.bytes;
      lru.push_front(std::move(entry));
      index.emplace(h, lru.begin());
      evict_locked();
    }
    return shared;
  }
};

AdContext::AdContext(AdContextOptions options) : state_(std::make_unique<State>()) { state_->options = options; }

AdContext::~AdContext() = default;

Status AdContext::install_rule(std::shared_ptr<const ExtensionAdRule> rule) {
  return state_->set_rule(std::move(rule), false);
}

Status AdContext::replace_rule(std::shared_ptr<const ExtensionAdRule> rule) {
  return state_->set_rule(std::move(rule), true);
}

std::shared_ptr<const ExtensionAdRule> AdContext::rule(std::string_view family) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->rules->rules.find(family);
  return it == state_->rules->rules.end() ? nullptr : it->second;
}

Result<std::shared_ptr<const program::SemanticProgram>> AdContext::expansion(
    const program::ExtensionOp& op, std::span<const program::ValueMetadata> operands) const {
  std::shared_ptr<const ExtensionAdRule> found;
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->options.expand_nodes) return std::shared_ptr<const program::SemanticProgram>();
    auto it = state_->rules->rules.find(op.family_id());
    if (it != state_->rules->rules.end()) found = it->second;
  }
  if (found == nullptr) return std::shared_ptr<const program::SemanticProgram>();
  return found->expansion(op, operands);
}

LoweringFallback AdContext::fallback() const {
  std::lock_guard lock(state_->mutex);
  return state_->options.fallback;
}

void AdContext::set_fallback(LoweringFallback fallback) {
  std::lock_guard lock(state_->mutex);
  if (state_->options.fallback == fallback) return;
  state_->options.fallback = fallback;
  ++state_->epoch;
  state_->clear_locked();
}

Result<JvpProgram> AdContext::jvp(const FrozenProgram& source, std::span<const std::uint32_t> active_inputs) {
  TENFERRO_ASSIGN_OR_RETURN(auto built, state_->transform(TransformKind::kJvp, source, active_inputs));
  TENFERRO_ASSIGN_OR_RETURN(ProgramBindings bindings,
                            internal::extend_bindings(source.bindings, built->layout.num_inputs, active_inputs.size()));
  return JvpProgram{FrozenProgram{built->program, std::move(bindings)}, built->layout};
}

Result<VjpProgram> AdContext::vjp(const FrozenProgram& source, std::span<const std::uint32_t> active_inputs) {
  TENFERRO_ASSIGN_OR_RETURN(auto built, state_->transform(TransformKind::kVjp, source, active_inputs));
  TENFERRO_ASSIGN_OR_RETURN(ProgramBindings bindings,
                            internal::extend_bindings(source.bindings, built->layout.num_inputs,
                                                      built->layout.differentiated_outputs.size()));
  return VjpProgram{FrozenProgram{built->program, std::move(bindings)}, built->layout};
}

Result<SplitVjpProgram> AdContext::split_vjp(const FrozenProgram& source,
                                             std::span<const std::uint32_t> active_inputs) {
  TENFERRO_ASSIGN_OR_RETURN(auto built, state_->transform(TransformKind::kSplitVjp, source, active_inputs));
  TENFERRO_ASSIGN_OR_RETURN(ProgramBindings forward,
                            internal::extend_bindings(source.bindings, built->layout.num_inputs, 0));
  TENFERRO_ASSIGN_OR_RETURN(
      ProgramBindings backward,
      internal::extend_bindings(source.bindings, built->layout.num_inputs,
                                built->num_residuals + built->layout.differentiated_outputs.size()));
  return SplitVjpProgram{FrozenProgram{built->program, std::move(forward)},
                         FrozenProgram{built->backward, std::move(backward)}, built->num_residuals, built->layout};
}

Result<ReusingVjpProgram> AdContext::vjp_reusing_outputs(const FrozenProgram& source,
                                                         std::span<const std::uint32_t> active_inputs,
                                                         std::size_t num_differentiated) {
  if (source.program && num_differentiated > source.program->outputs().size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "vjp_reusing_outputs: {} differentiated outputs requested, the program has {}",
                      num_differentiated, source.program->outputs().size());
  }
  TENFERRO_ASSIGN_OR_RETURN(auto built,
                            state_->transform(TransformKind::kReuseVjp, source, active_inputs, num_differentiated));
  TENFERRO_ASSIGN_OR_RETURN(
      ProgramBindings bindings,
      internal::extend_bindings(source.bindings, built->layout.num_inputs,
                                built->num_residuals + built->layout.differentiated_outputs.size()));
  return ReusingVjpProgram{FrozenProgram{built->backward, std::move(bindings)}, built->reused_outputs, built->layout};
}

Result<FrozenProgram> AdContext::grad(const FrozenProgram& source, std::span<const std::uint32_t> active_inputs,
                                      std::uint32_t output) {
  TENFERRO_ASSIGN_OR_RETURN(
      auto built,
      state_->cached(TransformKind::kGrad, source, active_inputs, output,
                     [&](const internal::TransformSetup&, internal::TransformCounters&) -> Result<BuiltTransform> {
                       BuiltTransform t;
                       TENFERRO_ASSIGN_OR_RETURN(t.program,
                                                 internal::build_grad_program(*this, source, active_inputs, output));
                       return t;
                     }));
  TENFERRO_ASSIGN_OR_RETURN(ProgramBindings bindings,
                            internal::extend_bindings(source.bindings, source.program->num_inputs(), 0));
  return FrozenProgram{built->program, std::move(bindings)};
}

AdCacheStats AdContext::cache_stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

void AdContext::clear_cache() {
  std::lock_guard lock(state_->mutex);
  state_->clear_locked();
}

AdMetrics AdContext::metrics() const {
  std::lock_guard lock(state_->mutex);
  return state_->metrics;
}

}  // namespace tenferro::ad
