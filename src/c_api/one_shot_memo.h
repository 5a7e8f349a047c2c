// OneShotMemo: what tf_einsum remembers of its recent calls (internal to
// libtenferro_c; unit-tested by one_shot_memo_test.cpp).
//
// Note [One-shot einsum memo]
// tf_einsum takes its subscripts as text, so every call parsed them, built
// an EinsumOp and looked the plan up in the executor's cache (a hash of the
// whole signature under the cache's mutex): 1.24 us for a 2 x 2 product
// whose prepared tf_einsum_run takes 0.18 us. C, Fortran and Julia callers
// write loops of one-shot calls, so a runtime remembers, per CPU, the last
// kEntries signatures -- subscripts text, planner, dtype and every operand's
// shape -- with their plans (a plan needs no op to run). A call takes its CPU's table with one
// atomic exchange (no lock: two threads running at the same time are on
// different CPUs, Note [Sharded counters]), compares, runs and puts the
// table back; a hit skips the parse, the op and the plan cache. A table
// that another thread holds (one preempted on the same CPU) reads as busy,
// and that call goes the uncached way. What is remembered is what an
// uncached call would compute again: the executor and its planning
// configuration are fixed for the runtime's lifetime, so a signature always
// gets the same plan. The bound: kEntries per table, at most kShards tables
// (made on a CPU's first call), and plans of at most kMaxPlanBytes (a
// larger network's plan is looked up as before; its run dwarfs the lookup).
//
// tf_linalg and tf_fft run through an eager context, and made a new one for
// every call: its engine resolution, capability queries and the engine's
// prepare (whose plan-cache lookup the context's call memo otherwise skips,
// Note [Extension call memo]) cost 1.6 us of a 2 x 2 determinant. Each
// table therefore also keeps one context, made by the CPU's first such call;
// the lease hands it to one call at a time, as a thread-compatible context
// needs.
//
// tf_einsum_vjp built the one-einsum program, asked the AD context for its
// backward program and ran that through the runtime (fingerprint, plan
// cache) on every call: 10 us for the gradients of a 2 x 2 product. A
// table also keeps the last kVjpEntries backward programs, prepared, keyed
// by the subscripts, planner, the active operands and the run's input
// signature (operands and cotangent: dtypes, shapes, layout classes); a hit
// runs the prepared program on the borrowed inputs.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/einsum_cpu/execution_plan.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::c_api {

/// See Note [One-shot einsum memo]. Thread-safe.
class OneShotMemo {
 public:
  static constexpr std::size_t kShards = 32;
  static constexpr std::size_t kEntries = 8;
  static constexpr std::size_t kMaxPlanBytes = std::size_t{64} << 10;
  static constexpr std::size_t kVjpEntries = 4;

  /// What a call is looked up by. Borrowed.
  struct Key {
    std::string_view subscripts;
    std::int32_t planner = 0;
    DType dtype = DType::kFloat64;
    std::span<const IntArrayRef> shapes;
  };

  /// What a gradient call is looked up by. Borrowed.
  struct VjpKey {
    std::string_view subscripts;
    std::int32_t planner = 0;
    std::span<const std::uint32_t> active;
    const runtime::InputSignature* signature = nullptr;  // operands, then the cotangent
  };

  struct Table;

  /// One CPU's table, held exclusively until destruction. find() and
  /// remember() do nothing on a busy lease.
  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : memo_(other.memo_), slot_(other.slot_), table_(std::exchange(other.table_, nullptr)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    bool busy() const noexcept { return table_ == nullptr; }
    /// The remembered plan for `key`, or null; valid while this lease
    /// lives.
    const einsum::ExecutionPlan* find(const Key& key) const noexcept;
    /// Remembers `key` -> `plan` in place of the oldest entry, unless the
    /// plan is larger than the memo's max_plan_bytes.
    void remember(const Key& key, std::shared_ptr<const einsum::ExecutionPlan> plan) noexcept;
    /// The remembered backward program for `key`, or null.
    const runtime::PreparedProgram* find(const VjpKey& key) const noexcept;
    /// Remembers `key` -> `prepared` in place of the oldest gradient entry.
    void remember(const VjpKey& key, std::shared_ptr<const runtime::PreparedProgram> prepared) noexcept;
    /// The table's eager context on `runtime` (made by the first call;
    /// the same runtime every time), or null on a busy lease or when making
    /// it fails.
    runtime::EagerContext* context(const runtime::Runtime& runtime) noexcept;

   private:
    friend class OneShotMemo;
    Lease(const OneShotMemo& memo, std::atomic<Table*>* slot, Table* table) noexcept
        : memo_(&memo), slot_(slot), table_(table) {}
    const OneShotMemo* memo_;
    std::atomic<Table*>* slot_;
    Table* table_;
  };

  OneShotMemo() noexcept : OneShotMemo(kMaxPlanBytes) {}
  /// `max_plan_bytes`: plans above it are not remembered.
  explicit OneShotMemo(std::size_t max_plan_bytes) noexcept : max_plan_bytes_(max_plan_bytes) {}
  ~OneShotMemo();
  OneShotMemo(const OneShotMemo&) = delete;
  OneShotMemo& operator=(const OneShotMemo&) = delete;

  /// The calling CPU's table, made on its first use; busy while another
  /// thread holds it (or when making it fails).
  Lease acquire() noexcept;

  /// Tables made so far (for tests).
  std::size_t tables() const noexcept;

 private:
  struct alignas(128) Shard {
    std::atomic<Table*> table{nullptr};  // null: leased, or not made yet
    std::atomic<bool> made{false};
  };
  std::size_t max_plan_bytes_;
  std::array<Shard, kShards> shards_{};
};

}  // namespace tenferro::c_api
