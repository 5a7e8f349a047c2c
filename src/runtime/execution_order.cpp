// execution_order: the greedy locality order of Note [Execution order].
#include "execution_order.h"

#include <cstdint>
#include <optional>
#include <queue>
#include <tuple>

#include "tenferro/base/small_vector.h"

namespace tenferro::runtime::internal {

namespace {

// A ready operation's priority, larger first: recency, frees, then lower
// program index.
struct Key {
  std::int64_t recency = -1;
  std::uint32_t frees = 0;
  std::uint32_t op = 0;
  friend bool operator<(const Key& a, const Key& b) {
    return std::tie(a.recency, a.frees, b.op) < std::tie(b.recency, b.frees, a.op);
  }
  friend bool operator==(const Key&, const Key&) = default;
};

// Re-keying the ready readers of a value costs its reader count; values read
// by more operations than this (a broadcast operand) are not re-keyed.
constexpr std::size_t kMaxRekeyedReaders = 64;

class Scheduler {
 public:
  explicit Scheduler(const program::SemanticProgram& p)
      : p_(p),
        n_(p.num_operations()),
        pending_(n_, 0),
        successors_(n_),
        readers_(p.num_values()),
        remaining_(p.num_values(), 0),
        touched_(p.num_values(), -1),
        pinned_(p.num_values(), false),
        state_(n_, kWaiting) {
    for (std::size_t i = 0; i < p.num_inputs(); ++i) pinned_[i] = true;
    for (program::ValueId v : p.outputs()) pinned_[v.index()] = true;
    std::int64_t previous_effect = -1;
    for (std::uint32_t op = 0; op < n_; ++op) {
      const program::OperationView view = p.operation(program::OperationId(op));
      for (program::ValueId v : view.operands()) {
        ++remaining_[v.index()];
        if (readers_[v.index()].empty() || readers_[v.index()].back() != op) readers_[v.index()].push_back(op);
        const program::ValueProducer& producer = p.producer(v);
        if (!producer.is_input) depend(op, producer.operation.index());
      }
      for (program::OperationId pred : view.ordered_after()) depend(op, pred.index());
      if (!view.effects().is_pure()) {
        if (previous_effect >= 0) depend(op, static_cast<std::uint32_t>(previous_effect));
        previous_effect = op;
      }
    }
    for (std::uint32_t op = 0; op < n_; ++op)
      if (pending_[op] == 0) make_ready(op);
  }

  std::vector<program::OperationId> run() {
    std::vector<program::OperationId> order;
    order.reserve(n_);
    while (true) {
      const std::optional<std::uint32_t> op = pop_best([](std::uint32_t) { return true; });
      if (!op) break;
      // Its partner was ready before `op` ran, so it does not depend on it.
      const std::optional<std::uint32_t> partner = pop_best([&](std::uint32_t r) { return pairable(*op, r); });
      for (std::uint32_t next : {*op, partner.value_or(kNone)}) {
        if (next == kNone) continue;
        schedule(next, static_cast<std::int64_t>(order.size()));
        order.push_back(program::OperationId(next));
      }
    }
    return order;
  }

 private:
  enum : std::uint8_t { kWaiting, kReady, kDone };
  static constexpr std::uint32_t kNone = UINT32_MAX;
  // How many ready entries a partner search looks at.
  static constexpr int kPartnerSearch = 16;

  // The highest-priority ready operation accepted by `accept` (among the
  // first kPartnerSearch current entries), removed from the ready set.
  template <class Accept>
  std::optional<std::uint32_t> pop_best(Accept accept) {
    std::optional<std::uint32_t> found;
    SmallVector<Key, kPartnerSearch> skipped;
    while (!ready_.empty() && !found && skipped.size() < kPartnerSearch) {
      const Key top = ready_.top();
      ready_.pop();
      if (state_[top.op] != kReady) continue;  // already scheduled
      const Key current = key(top.op);
      if (!(current == top)) {  // keys only grow: an entry from before a change
        ready_.push(current);
        continue;
      }
      if (accept(top.op)) {
        found = top.op;
      } else {
        skipped.push_back(top);
      }
    }
    for (const Key& k : skipped) ready_.push(k);
    return found;
  }

  // Two pure operations of one kind that may carry work estimates (an
  // extension family, or dot_general) may form a concurrent group (Note
  // [Concurrent groups]); the runtime checks the estimates once providers
  // are chosen.
  bool pairable(std::uint32_t a, std::uint32_t b) const {
    const program::OperationView x = p_.operation(program::OperationId(a));
    const program::OperationView y = p_.operation(program::OperationId(b));
    const bool estimated = x.is_extension() || x.core_op() == program::CoreSemanticOp::kDotGeneral;
    return a != b && estimated && x.effects().is_pure() && y.effects().is_pure() && x.name() == y.name();
  }

  void depend(std::uint32_t op, std::uint32_t pred) {
    ++pending_[op];
    successors_[pred].push_back(op);
  }

  Key key(std::uint32_t op) const {
    Key k;
    k.op = op;
    const auto operands = p_.operation(program::OperationId(op)).operands();
    for (std::size_t i = 0; i < operands.size(); ++i) {
      const std::uint32_t v = operands[i].index();
      k.recency = std::max(k.recency, touched_[v]);
      if (pinned_[v]) continue;
      std::uint32_t uses = 0;
      bool first = true;
      for (std::size_t j = 0; j < operands.size(); ++j) {
        if (operands[j].index() != v) continue;
        first = first && j >= i;
        ++uses;
      }
      if (first && remaining_[v] == uses) ++k.frees;
    }
    return k;
  }

  void make_ready(std::uint32_t op) {
    state_[op] = kReady;
    ready_.push(key(op));
  }

  void touch(std::uint32_t v, std::int64_t time) {
    touched_[v] = time;
    if (readers_[v].size() > kMaxRekeyedReaders) return;
    for (std::uint32_t r : readers_[v])
      if (state_[r] == kReady) ready_.push(key(r));
  }

  void schedule(std::uint32_t op, std::int64_t time) {
    state_[op] = kDone;
    const program::OperationView view = p_.operation(program::OperationId(op));
    for (program::ValueId v : view.operands()) --remaining_[v.index()];
    for (program::ValueId v : view.operands()) touch(v.index(), time);
    for (std::size_t r = 0; r < view.num_results(); ++r) touched_[view.result(r).index()] = time;
    for (std::uint32_t s : successors_[op])
      if (--pending_[s] == 0) make_ready(s);
  }

  const program::SemanticProgram& p_;
  std::uint32_t n_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::vector<std::uint32_t>> successors_;
  std::vector<std::vector<std::uint32_t>> readers_;
  std::vector<std::uint32_t> remaining_;
  std::vector<std::int64_t> touched_;
  std::vector<bool> pinned_;
  std::vector<std::uint8_t> state_;
  std::priority_queue<Key> ready_;
};

}  // namespace

std::vector<program::OperationId> execution_order(const program::SemanticProgram& program) {
  if (program.num_operations() <= 2) {  // too few for the order to matter (an eager call has one)
    std::vector<program::OperationId> order;
    for (std::uint32_t op = 0; op < program.num_operations(); ++op) order.push_back(program::OperationId(op));
    return order;
  }
  return Scheduler(program).run();
}

}  // namespace tenferro::runtime::internal
