// ExecutionPlan: a ContractionTree compiled for the native CPU engine. It
// fixes every intermediate's memory order, the operand copies and
// temporaries a step cannot avoid (Note [Layout-aware execution] in
// src/einsum_cpu/layout_planner.h), the dot_general dimension numbers of every
// step and a workspace layout planned once; execute() then runs the whole
// N-ary einsum with no planning, no strings and no allocation of its own.
//
// Note [Einsum execution]
// execute() walks the steps in order. An input is read through a strided
// view (a repeated label is a diagonal view with summed strides, a
// broadcast axis is dropped), so diagonals and traces never copy. Labels
// summed out of one operand are reduced (cpu::reduce) into a workspace
// buffer in the order the step wants. Each step then calls
// DotGeneralComposite::dot_general_into (small steps whose layout the plan
// knows call the GEMM provider directly) writing straight into its result
// buffer, or into the user's output for the root (so the final permutation
// is fused into the last GEMM's output strides), unless the layout pass
// planned a copy. The composite chooses the step's parallel mode (Note
// [dot_general parallel mode]): large GEMMs run kInner on the domain's
// workers, batches of small ones kOuter. Intermediates live at fixed
// offsets of one workspace: buffers whose lifetimes do not overlap share
// memory (first fit in step order). A single-operand einsum is one reduce
// or one copy into the output.
//
// The plan assumes row-major inputs and output when choosing layouts; other
// strides still give correct results (the composite then copies what it
// must, which ExecutionStats::composite_copies reports).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {

/// What executions did (accumulated over calls). Plain counters.
struct ExecutionStats {
  std::int64_t executions = 0;
  std::int64_t steps = 0;       ///< binary steps run
  std::int64_t gemm_steps = 0;  ///< steps run as GEMMs
  /// Small steps that called the GEMM provider directly (Note [Direct small
  /// steps] in execution_plan.cpp) instead of the dot_general composite.
  std::int64_t direct_steps = 0;
  std::int64_t presums = 0;          ///< operands reduced before their step
  std::int64_t planned_copies = 0;   ///< operand copies and result temporaries of the layout plan
  std::int64_t copied_elements = 0;  ///< elements those copies moved
  /// Copies the composite made on its own because an input's real strides
  /// differed from the planned ones (0 when the layout plan held).
  std::int64_t composite_copies = 0;
  std::int64_t inner_steps = 0;       ///< steps run in ParallelMode::kInner
  std::int64_t outer_steps = 0;       ///< steps run in ParallelMode::kOuter
  std::int64_t sequential_steps = 0;  ///< steps run in ParallelMode::kSequential
};

/// Options of ExecutionPlan::compile.
struct ExecutionPlanOptions {
  /// Operand layouts the GEMM provider accepts (the composite's provider).
  cpu::GemmStrideSupport gemm_strides = cpu::GemmStrideSupport::kAny;
};

/// See the file comment. Immutable after compile; thread-safe: any number
/// of threads may execute one plan at once, each with its own workspace.
/// Derives from runtime::ProviderPlan so a prepared node can hold it.
class ExecutionPlan final : public runtime::ProviderPlan {
 public:
  struct Impl;  // src/einsum_cpu/execution_plan.cpp

  /// Compiles `tree` (kept by value). Errors: kResourceExhausted when the
  /// workspace size overflows.
  static Result<std::shared_ptr<const ExecutionPlan>> compile(const ContractionTree& tree,
                                                              const ExecutionPlanOptions& options = {});
  ~ExecutionPlan() override;

  const ContractionTree& tree() const noexcept;
  const Network& network() const noexcept { return tree().network(); }
  DType dtype() const noexcept { return network().dtype(); }
  /// The output shape (Network::output_shape).
  IntArrayRef output_shape() const noexcept;
  /// Bytes of workspace one execution needs (64-byte aligned offsets).
  std::size_t workspace_bytes() const noexcept;
  /// Approximate bytes this plan object retains (for cache bounds).
  std::size_t retained_bytes() const noexcept;
  /// Operand copies and result temporaries the layout plan makes per run.
  std::int64_t planned_copies() const noexcept;
  /// Steps whose result temporary is written and copied out in cache-sized
  /// chunks (Note [Chunked temporaries] in execution_plan.cpp).
  std::int64_t chunked_steps() const noexcept;

  /// ok when `inputs` are what the plan was made for: as many as its
  /// operands, each of its dtype and bound shape, with data unless empty.
  /// Errors name the first input that differs and what the plan was made
  /// for: kInvalidArgument (count, data), kDTypeMismatch, kShapeMismatch.
  /// execute() runs this check first; a caller checks its inputs before its
  /// output with it, so the message names the argument that is wrong.
  Status check_inputs(std::span<const TensorView> inputs) const;

  /// Runs the einsum. `inputs` match the bound shapes and dtype (any
  /// non-negative strides); `output` has the output shape (any
  /// non-overlapping strides; row-major is what the plan is tuned for) and
  /// must not overlap inputs or workspace. `workspace` holds at least
  /// workspace_bytes() bytes, 64-byte aligned. Borrows everything for the
  /// call. Uses `ctx` as its only parallelism. `stats`, when given, is
  /// incremented. Errors: kShapeMismatch / kDTypeMismatch for inputs that do
  /// not match, kInvalidArgument for a short workspace, and any kernel error
  /// (with the step named).
  Status execute(std::span<const TensorView> inputs, const TensorView& output, std::span<std::byte> workspace,
                 const cpu::DotGeneralComposite& composite, const cpu::ParallelContext& ctx,
                 ExecutionStats* stats = nullptr) const;

  /// The tree's explain() plus every step's memory orders, copies and
  /// workspace offsets.
  std::string explain() const;

 private:
  explicit ExecutionPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenferro::einsum
