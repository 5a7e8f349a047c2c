// OneShotMemo (Note [One-shot einsum memo] in one_shot_memo.h).
#include "one_shot_memo.h"

#include <algorithm>
#include <new>
#include <optional>

#include "tenferro/base/sharded_counters.h"

namespace tenferro::c_api {

struct OneShotMemo::Table {
  struct Entry {
    std::string subscripts;
    std::int32_t planner = 0;
    DType dtype = DType::kFloat64;
    SmallVector<std::int64_t, 16> shapes;               // rank, extents..., per operand
    std::shared_ptr<const einsum::ExecutionPlan> plan;  // null: free

    bool matches(const Key& key) const noexcept {
      if (plan == nullptr || planner != key.planner || dtype != key.dtype) return false;
      std::size_t at = 0;
      for (const IntArrayRef& shape : key.shapes) {
        if (shapes.size() - at < shape.size() + 1 || shapes[at] != static_cast<std::int64_t>(shape.size())) {
          return false;
        }
        ++at;
        for (const std::int64_t e : shape)
          if (shapes[at++] != e) return false;
      }
      return at == shapes.size() && subscripts == key.subscripts;
    }
  };
  std::array<Entry, kEntries> entries;
  std::size_t next = 0;  // the entry remember() replaces
  struct VjpEntry {
    std::string subscripts;
    std::int32_t planner = 0;
    SmallVector<std::uint32_t, 4> active;
    runtime::InputSignature signature;
    std::shared_ptr<const runtime::PreparedProgram> prepared;  // null: free

    bool matches(const VjpKey& key) const noexcept {
      return prepared != nullptr && planner == key.planner && std::ranges::equal(active.span(), key.active) &&
             signature == *key.signature && subscripts == key.subscripts;
    }
  };
  std::array<VjpEntry, kVjpEntries> vjp;
  std::size_t next_vjp = 0;
  std::optional<runtime::EagerContext> context;
};

OneShotMemo::~OneShotMemo() {
  for (Shard& s : shards_) delete s.table.load(std::memory_order_acquire);
}

OneShotMemo::Lease OneShotMemo::acquire() noexcept {
  Shard& shard = shards_[this_cpu_shard(kShards)];
  Table* table = shard.table.exchange(nullptr, std::memory_order_acquire);
  if (table == nullptr && !shard.made.exchange(true, std::memory_order_relaxed)) {
    table = new (std::nothrow) Table();
    if (table == nullptr) shard.made.store(false, std::memory_order_relaxed);
  }
  return Lease(*this, &shard.table, table);
}

std::size_t OneShotMemo::tables() const noexcept {
  std::size_t n = 0;
  for (const Shard& s : shards_) n += s.made.load(std::memory_order_relaxed) ? 1 : 0;
  return n;
}

OneShotMemo::Lease::~Lease() {
  if (table_ != nullptr) slot_->store(table_, std::memory_order_release);
}

const einsum::ExecutionPlan* OneShotMemo::Lease::find(const Key& key) const noexcept {
  if (table_ == nullptr) return nullptr;
  for (const Table::Entry& e : table_->entries) {
    if (e.matches(key)) return e.plan.get();
  }
  return nullptr;
}

void OneShotMemo::Lease::remember(const Key& key, std::shared_ptr<const einsum::ExecutionPlan> plan) noexcept {
  if (table_ == nullptr || plan == nullptr || plan->retained_bytes() > memo_->max_plan_bytes_) return;
  Table::Entry& e = table_->entries[table_->next];
  table_->next = (table_->next + 1) % kEntries;
  e.plan = nullptr;
  try {
    e.subscripts.assign(key.subscripts);
    e.shapes.clear();
    for (const IntArrayRef& shape : key.shapes) {
      e.shapes.push_back(static_cast<std::int64_t>(shape.size()));
      e.shapes.append(shape.begin(), shape.end());
    }
  } catch (...) {
    return;  // out of memory: the entry stays free
  }
  e.planner = key.planner;
  e.dtype = key.dtype;
  e.plan = std::move(plan);
}

const runtime::PreparedProgram* OneShotMemo::Lease::find(const VjpKey& key) const noexcept {
  if (table_ == nullptr) return nullptr;
  for (const Table::VjpEntry& e : table_->vjp) {
    if (e.matches(key)) return e.prepared.get();
  }
  return nullptr;
}

void OneShotMemo::Lease::remember(const VjpKey& key,
                                  std::shared_ptr<const runtime::PreparedProgram> prepared) noexcept {
  if (table_ == nullptr || prepared == nullptr) return;
  Table::VjpEntry& e = table_->vjp[table_->next_vjp];
  table_->next_vjp = (table_->next_vjp + 1) % kVjpEntries;
  e.prepared = nullptr;
  try {
    e.subscripts.assign(key.subscripts);
    e.active.assign(key.active);
    e.signature = *key.signature;
  } catch (...) {
    return;  // out of memory: the entry stays free
  }
  e.planner = key.planner;
  e.prepared = std::move(prepared);
}

runtime::EagerContext* OneShotMemo::Lease::context(const runtime::Runtime& runtime) noexcept {
  if (table_ == nullptr) return nullptr;
  if (!table_->context) {
    try {
      table_->context.emplace(runtime.on());
    } catch (...) {
      return nullptr;  // out of memory: the caller makes its own
    }
  }
  return &*table_->context;
}

}  // namespace tenferro::c_api
