// GraphCompiler: the fixed pipeline, custom transforms, explain() (Note
// [Compiler pipeline] in graph_compiler.h). The cache is in compile_cache.cpp.
#include "tenferro/compiler/graph_compiler.h"

#include <algorithm>

#include <fmt/format.h>

#include "compile_cache.h"
#include "tenferro/program/semantic_transform.h"
#include "tenferro/program/validation.h"
#include "working_graph.h"

namespace tenferro::compiler {
namespace {

/// Every guard of `traced` must survive compilation (pipeline step 2).
Status check_guards_kept(const program::SemanticProgram& traced, const program::SemanticProgram& compiled) {
  for (const program::ShapeGuard& g : traced.guards()) {
    const bool kept = std::any_of(compiled.guards().begin(), compiled.guards().end(),
                                  [&](const program::ShapeGuard& h) { return h.same_predicate(g); });
    if (!kept) {
      return make_error(ErrorCode::kInternal, ErrorStage::kCompile,
                        "compiler: the compiled program lost the shape guard {} ({}) of the traced program",
                        g.to_string(), g.reason);
    }
  }
  return ok_status();
}

/// The number of rewrites `m` counts (each one changes the program).
std::size_t rewrites(const CompileMetrics& m) {
  return m.identities_removed + m.views_composed + m.commutative_operands_swapped + m.dot_general_transposes_folded +
         m.dot_general_dimensions_sorted + m.common_subexpressions + m.dead_operations + m.extension_outputs_pruned;
}

/// Steps 1-6 of the fixed pipeline on `traced`.
Result<program::FrozenProgram> run_fixed_pipeline(const program::FrozenProgram& traced, const CompilerOptions& options,
                                                  CompileMetrics& metrics) {
  using namespace internal;  // NOLINT
  const std::size_t rewrites_before = rewrites(metrics);
  WorkingGraph graph = WorkingGraph::read(*traced.program);  // 1
  graph = canonicalize(graph, options, metrics);             // 2-4 (metadata re-checked)
  graph = eliminate_dead_code(std::move(graph), metrics);    // 4
  if (options.prune_extension_outputs) {                     // 5
    TENFERRO_ASSIGN_OR_RETURN(graph, prune_extension_outputs(std::move(graph), metrics));
    graph = eliminate_dead_code(std::move(graph), metrics);
  }
  if (rewrites(metrics) == rewrites_before) {  // nothing changed: `traced` is the result
    ++metrics.unchanged_programs_reused;
    return traced;
  }
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram compiled, emit_program(graph));  // 6
  TENFERRO_TRY(program::validate_transform_output(*traced.program, *compiled.program, "compiler pipeline"));
  TENFERRO_TRY(check_guards_kept(*traced.program, *compiled.program));
  compiled.bindings = traced.bindings;
  return compiled;
}

Status check_options(const CompilerOptions& options) {
  for (std::size_t i = 0; i < options.transforms.size(); ++i) {
    if (!options.transforms[i]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "compile: expected a SemanticTransform, found null at CompilerOptions::transforms[{}]", i);
    }
  }
  return ok_status();
}

}  // namespace

Result<CompiledGraph> compile_uncached(const TracedGraph& graph, const CompilerOptions& options) {
  if (!graph.program()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "compile: expected a TracedGraph from TraceContext::finish, found an empty one");
  }
  TENFERRO_TRY(check_options(options));
  CompileMetrics metrics;
  metrics.operations_in = graph.program()->num_operations();
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram compiled, run_fixed_pipeline(graph.frozen(), options, metrics));
  for (const auto& transform : options.transforms) {
    auto next = program::apply_transform(*transform, compiled);
    if (!next.ok()) {
      return next.status().with_context(
          fmt::format("custom transform {}: {}", transform->name(), next.status().message()), ErrorStage::kCompile);
    }
    compiled = std::move(next).value();
    ++metrics.custom_transforms;
  }
  if (!options.transforms.empty()) {
    TENFERRO_ASSIGN_OR_RETURN(compiled, run_fixed_pipeline(compiled, options, metrics));
  }
  metrics.operations_out = compiled.program->num_operations();
  return CompiledGraph{std::move(compiled.program), graph.bindings(), metrics};
}

std::string CompiledGraph::explain() const {
  if (!program) return "CompiledGraph (empty)\n";
  std::string out = "CompiledGraph\n";
  const CompileMetrics& m = metrics;
  out += fmt::format(
      "pipeline: {} -> {} operations{}; identities removed {}, views composed {}, commutative operands ordered {}, "
      "dot_general transposes folded {}, dot_general dimensions sorted {}, common subexpressions {}, dead "
      "operations {}, extension outputs pruned {}, custom transforms {}, unchanged programs reused {}\n",
      m.operations_in, m.operations_out, m.cache_hit ? " (cache hit)" : "", m.identities_removed, m.views_composed,
      m.commutative_operands_swapped, m.dot_general_transposes_folded, m.dot_general_dimensions_sorted,
      m.common_subexpressions, m.dead_operations, m.extension_outputs_pruned, m.custom_transforms,
      m.unchanged_programs_reused);
  out += "bindings:";
  if (bindings.num_bound() == 0) out += " none (every input is a parameter)";
  for (std::size_t i = 0; i < bindings.num_inputs(); ++i) {
    if (const Tensor* t = bindings.bound_tensor(i)) out += fmt::format("\n  %{} bound to {}", i, t->to_string());
  }
  out += "\n";
  out += program->explain();
  return out;
}

// --- GraphCompiler ---

GraphCompiler::GraphCompiler(CompileCacheConfig config) : cache_(std::make_unique<Cache>(config)) {}
GraphCompiler::~GraphCompiler() = default;

Result<CompiledGraph> GraphCompiler::compile(const TracedGraph& graph, const CompilerOptions& options) {
  if (!graph.program()) return compile_uncached(graph, options);  // the typed error
  TENFERRO_TRY(check_options(options));
  const internal::OptionsKey key = internal::OptionsKey::of(options);
  if (auto hit = cache_->find(*graph.program(), key)) {
    CompileMetrics metrics = hit->metrics;
    metrics.cache_hit = true;
    return CompiledGraph{hit->compiled, graph.bindings(), metrics};
  }
  TENFERRO_ASSIGN_OR_RETURN(CompiledGraph compiled, compile_uncached(graph, options));
  cache_->insert(graph.program(), key, compiled.program, compiled.metrics);
  return compiled;
}

CompileCacheStats GraphCompiler::cache_stats() const { return cache_->stats(); }
void GraphCompiler::clear_cache() { cache_->clear(); }
const CompileCacheConfig& GraphCompiler::cache_config() const noexcept { return cache_->config(); }

}  // namespace tenferro::compiler
