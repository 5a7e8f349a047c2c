// AdContext: the owner of extension AD rules, the lowering-fallback policy and
// the cache of transformed programs; its jvp / vjp / split_vjp methods are the
// SemanticProgram -> SemanticProgram AD transforms (docs/ad.md). They run
// before runtime preparation: the result is an ordinary frozen program for
// Runtime::prepare_for.
//
// Note [Linearize, then transpose]
// Forward mode walks the source program once: every operation is copied
// (the primal) and its rule emits the tangent of its results from the
// tangents of its operands, as linear operations whose non-linear
// coefficients are computed from primal values. Reverse mode builds the
// same linearization and then transposes it: the linear operations are
// visited in reverse, each one's transpose rule turns its result
// cotangents into operand cotangents, and cotangents of a value used
// several times are summed. Core ops have built-in rules (docs/ad.md);
// extension ops use the rule installed for their family, tried first (a
// rule may first replace the node by an expansion, a program of simpler
// operations that stands for it in the primal pass too, each of them then
// differentiated on its own: an einsum by its planned pairwise steps); an
// extension without a rule is differentiated through its validated core
// lowering only under LoweringFallback::kThroughCoreLowering, and is
// otherwise a kUnimplemented error. An effectful extension op whose
// operands carry tangents requires a rule (kFailedPrecondition otherwise);
// rules never emit effectful operations. Every emitted operation carries
// provenance derived from the source operation it differentiates
// ("jvp <op>", "transpose <- jvp <op>"); primal copies keep the source's.
// Errors are compile-stage and name the source node.
//
// Note [Complex convention]
// Forward mode computes J u, the ordinary (real-linear) derivative.
// Reverse mode computes the adjoint J* with respect to the real inner
// product <u, v> = Re sum conj(u) v, i.e. it treats C as R^2. For a real
// loss L of a complex z = x + iy the gradient is therefore
//     grad L = dL/dx + i dL/dy = 2 dL/d(conj z),
// the conjugate-Wirtinger convention PyTorch's autograd implements (and
// the direction of steepest ascent); for a holomorphic f the cotangent
// rule is ct_z = conj(f'(z)) ct_y. (JAX returns the conjugate of this.)
// The identity the tests check is Re <v, J u> = Re <J* v, u>.
//
// Note [Transform cache]
// Transformed programs are cached per AdContext by (source fingerprint,
// transform kind and its option, active inputs, rule epoch). A hit is confirmed with
// structurally_equal() against the retained source program, so a
// fingerprint collision is a miss, never a wrong program. Bindings and
// provenance are not part of the key: bindings are attached per call, and a
// hit returns the program built for the first structurally equal source
// (with that source's provenance and input names). The cache is bounded in
// entries and retained bytes (canonical form bytes of the cached
// programs), evicts least recently used entries, and reports statistics;
// installing or replacing a rule, or changing the fallback policy,
// advances the rule epoch and clears it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tenferro/ad/ad_program.h"
#include "tenferro/ad/ad_rule.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::ad {

/// How an extension op without an installed rule is differentiated.
enum class LoweringFallback : std::uint8_t {
  kDisabled,             ///< kUnimplemented naming the family (the default)
  kThroughCoreLowering,  ///< differentiate its validated core lowering
};

/// Bounds of the transform cache (Note [Transform cache]).
struct AdCacheLimits {
  std::size_t max_entries = 128;
  std::size_t max_bytes = std::size_t{64} << 20;
};

struct AdCacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;
};

/// What the transforms did (cumulative, per context).
struct AdMetrics {
  std::uint64_t transforms_built = 0;      ///< cache misses that built a program
  std::uint64_t direct_vjp_nodes = 0;      ///< nodes reverse mode sent to a direct-VJP rule
  std::uint64_t lowering_fallbacks = 0;    ///< extension nodes differentiated through their lowering
  std::uint64_t extension_rule_calls = 0;  ///< linearize/transpose calls to installed rules
  std::uint64_t expanded_nodes = 0;        ///< extension nodes replaced by their rule's expansion
};

struct AdContextOptions {
  LoweringFallback fallback = LoweringFallback::kDisabled;
  AdCacheLimits cache;
  /// Ask installed rules for expansions (ExtensionAdRule::expansion(): an
  /// einsum of three or more operands of known shapes is differentiated
  /// through its planned two-operand steps). false differentiates every
  /// node itself.
  bool expand_nodes = true;
};

/// See the file comment. Thread-safe: transforms may run concurrently with
/// each other and with rule installation (each transform uses the rules
/// installed when it started). Owns its rules (retained) and cache; no
/// global state.
class AdContext {
 public:
  explicit AdContext(AdContextOptions options = {});
  ~AdContext();
  AdContext(const AdContext&) = delete;
  AdContext& operator=(const AdContext&) = delete;

  // --- rules ---
  /// Installs `rule` for its family. kAlreadyExists when the family has a
  /// rule (use replace_rule), kInvalidArgument for null.
  Status install_rule(std::shared_ptr<const ExtensionAdRule> rule);
  /// Installs `rule`, replacing the family's current rule if any.
  Status replace_rule(std::shared_ptr<const ExtensionAdRule> rule);
  /// The rule installed for `family`, or null.
  std::shared_ptr<const ExtensionAdRule> rule(std::string_view family) const;
  /// What the transforms differentiate in place of a node of `op` with
  /// operands of `operands`: its rule's expansion (ExtensionAdRule::
  /// expansion), or null (no rule, no expansion, or expand_nodes off).
  Result<std::shared_ptr<const program::SemanticProgram>> expansion(
      const program::ExtensionOp& op, std::span<const program::ValueMetadata> operands) const;
  LoweringFallback fallback() const;
  void set_fallback(LoweringFallback fallback);

  // --- transforms (Note [AD program layout], Note [Linearize, then transpose]) ---
  /// Forward mode with respect to `active_inputs` (strictly increasing
  /// positions of floating/complex inputs). Errors (stage kCompile):
  /// kInvalidArgument for a bad active list, kDTypeMismatch for an
  /// integer/bool active input, rule and rule-contract errors naming the
  /// node.
  Result<JvpProgram> jvp(const program::FrozenProgram& source, std::span<const std::uint32_t> active_inputs);
  /// Reverse mode as one program (forward pass + transposed linearization).
  Result<VjpProgram> vjp(const program::FrozenProgram& source, std::span<const std::uint32_t> active_inputs);
  /// Reverse mode split into a forward program that returns the residuals
  /// and a backward program that consumes them.
  Result<SplitVjpProgram> split_vjp(const program::FrozenProgram& source, std::span<const std::uint32_t> active_inputs);
  /// Reverse mode of outputs [0, num_differentiated) for a caller that
  /// holds the values of the other outputs (ReusingVjpProgram).
  /// kInvalidArgument when num_differentiated exceeds the output count.
  Result<ReusingVjpProgram> vjp_reusing_outputs(const program::FrozenProgram& source,
                                                std::span<const std::uint32_t> active_inputs,
                                                std::size_t num_differentiated);
  /// grad_program (derivative_programs.h) through the transform cache: the
  /// program of the gradients of the real scalar output `output` with
  /// respect to `active_inputs` (its inputs are the source's). A hit
  /// returns the same program object, which the runtime's plan cache then
  /// finds by identity.
  Result<program::FrozenProgram> grad(const program::FrozenProgram& source,
                                      std::span<const std::uint32_t> active_inputs, std::uint32_t output = 0);

  // --- cache and metrics ---
  AdCacheStats cache_stats() const;
  void clear_cache();
  AdMetrics metrics() const;

  struct State;  // src/ad; not part of the API

 private:
  std::unique_ptr<State> state_;
};

}  // namespace tenferro::ad
