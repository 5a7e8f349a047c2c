// Admission control (docs/runtime.md, "Admission policy"): a
// ResourceArbiter grants sets of resources atomically; the runtime uses it
// twice per execution, first for run-level memory admission from the buffer
// plan, then for one atomic lease per scheduled node.
//
// Note [Atomic leases]
// A request lists every resource a run or node needs (memory per storage
// domain, CPU threads per domain, device streams, exclusivity tokens), in
// canonical order (sorted by ResourceKey, no duplicates). The arbiter grants
// all of it at once or queues the request while it holds nothing, so no
// request ever holds part of a set while waiting for the rest: there is no
// hold-and-wait, hence no deadlock, whatever the number of resources. The
// canonical order additionally makes every arbiter that does lock resources
// one by one acquire them in the same global order.
//
// Note [Starvation-free admission]
// FifoResourceArbiter queues per resource in arrival order: a waiting
// request is granted as soon as every resource it names has enough free
// capacity and no earlier waiting request names that resource. A request
// therefore never waits behind a later one on any of its resources; every
// waiting request ahead of it is granted after finitely many releases (each
// holder eventually releases, since leases end at node completion and runs
// end at drain), so every request is eventually granted. Requests on
// disjoint resources never block each other. An amount above a resource's
// capacity can never be granted and fails immediately with
// kResourceExhausted (the prepare stage checks the same bound earlier).
//
// Note [Unaccounted requests]
// A resource without a capacity is unlimited, so a request that names no
// accounted resource is granted at once and its release does nothing. The
// accounts are fixed at construction, so FifoResourceArbiter decides this
// without its mutex. Runtimes without capacities (the CPU runtime's
// default) thus take no lock and write no shared line for the run admission
// and the node leases of every run: with the mutex, two threads running one
// prepared 8 x 8 einsum spent a quarter of execute_prepared's samples
// waiting for the arbiter's cache line, and got no more runs per second
// than one thread. Exclusivity tokens are the exception: a kExclusive key
// is always accounted, with capacity 1 unless the capacities list it (a
// runtime configuration accepts only 1 there), so a provider that leases a
// token to serialise a library that is not thread-safe never runs twice at
// once. Their accounts are made under the mutex when a token is first
// requested.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/status.h"

namespace tenferro::runtime {

/// What kind of resource a key names.
enum class ResourceKind : std::uint8_t {
  kMemoryBytes,    ///< bytes of a storage domain (run-level admission)
  kCpuThreads,     ///< worker threads of a CPU resource domain
  kDeviceStreams,  ///< streams or queues of a device
  kExclusive,      ///< an exclusivity token (capacity 1, always accounted: Note [Unaccounted requests])
};

/// One accountable resource: a kind and the id of its domain/device/token.
struct ResourceKey {
  ResourceKind kind = ResourceKind::kMemoryBytes;
  std::uint64_t id = 0;

  friend constexpr bool operator==(ResourceKey, ResourceKey) noexcept = default;
  friend constexpr auto operator<=>(ResourceKey, ResourceKey) noexcept = default;
  std::string to_string() const;
};

/// An amount of one resource.
struct ResourceAmount {
  ResourceKey key;
  std::uint64_t amount = 0;

  friend constexpr bool operator==(ResourceAmount, ResourceAmount) noexcept = default;
};

/// True when `request` is in canonical order: keys strictly increasing.
bool is_canonical_request(std::span<const ResourceAmount> request) noexcept;

/// Grants resource sets atomically. Implementations are thread-safe and
/// never grant part of a request. Requests must be canonical.
class ResourceArbiter {
 public:
  virtual ~ResourceArbiter() = default;

  /// Total capacity of `key`, or nullopt when the arbiter does not account
  /// it (unlimited).
  virtual std::optional<std::uint64_t> capacity(ResourceKey key) const noexcept = 0;
  /// Blocks until the whole request is granted. kResourceExhausted when an
  /// amount exceeds its capacity (never grantable); kCancelled when
  /// `*cancelled` becomes true while waiting (checked after wake_waiters()).
  /// While waiting the caller holds nothing of the request.
  virtual Status acquire(std::span<const ResourceAmount> request, const std::atomic<bool>* cancelled) noexcept = 0;
  /// Grants the whole request now or nothing; never waits.
  virtual bool try_acquire(std::span<const ResourceAmount> request) noexcept = 0;
  /// Returns a request granted earlier (exactly the same amounts).
  virtual void release(std::span<const ResourceAmount> request) noexcept = 0;
  /// Wakes every waiter so it re-checks its cancellation flag.
  virtual void wake_waiters() noexcept = 0;
};

/// A granted request, released on destruction. Borrows `request` (which must
/// outlive the lease: it lives in the prepared plan). Move-only.
class ResourceLease {
 public:
  ResourceLease() noexcept = default;
  ResourceLease(ResourceArbiter* arbiter, std::span<const ResourceAmount> request) noexcept
      : arbiter_(arbiter), request_(request) {}
  ResourceLease(ResourceLease&& other) noexcept : arbiter_(other.arbiter_), request_(other.request_) {
    other.arbiter_ = nullptr;
  }
  ResourceLease& operator=(ResourceLease&& other) noexcept {
    if (this != &other) {
      reset();
      arbiter_ = other.arbiter_;
      request_ = other.request_;
      other.arbiter_ = nullptr;
    }
    return *this;
  }
  ResourceLease(const ResourceLease&) = delete;
  ResourceLease& operator=(const ResourceLease&) = delete;
  ~ResourceLease() { reset(); }

  bool held() const noexcept { return arbiter_ != nullptr; }
  /// Releases now (idempotent).
  void reset() noexcept {
    if (arbiter_ != nullptr) arbiter_->release(request_);
    arbiter_ = nullptr;
  }

 private:
  ResourceArbiter* arbiter_ = nullptr;
  std::span<const ResourceAmount> request_;
};

/// The default arbiter: fixed capacities, per-resource FIFO queues (Note
/// [Starvation-free admission]). Waiting allocates nothing (waiters live on
/// the waiting thread's stack). Thread-safe.
class FifoResourceArbiter final : public ResourceArbiter {
 public:
  /// `capacities` must have distinct keys; unlisted resources are unlimited,
  /// except exclusivity tokens (capacity 1).
  explicit FifoResourceArbiter(std::vector<ResourceAmount> capacities);
  ~FifoResourceArbiter() override;

  std::optional<std::uint64_t> capacity(ResourceKey key) const noexcept override;
  Status acquire(std::span<const ResourceAmount> request, const std::atomic<bool>* cancelled) noexcept override;
  bool try_acquire(std::span<const ResourceAmount> request) noexcept override;
  void release(std::span<const ResourceAmount> request) noexcept override;
  void wake_waiters() noexcept override;

  /// Free amount of `key` (its capacity when never used; nullopt if unlimited).
  std::optional<std::uint64_t> available(ResourceKey key) const noexcept;
  /// Requests currently queued (for deterministic tests and diagnostics).
  std::size_t waiting() const noexcept;
  /// Requests granted through the accounts so far (including try_acquire
  /// successes); requests naming no accounted resource are granted without
  /// the accounts and not counted (Note [Unaccounted requests]).
  std::uint64_t grants() const noexcept;

 private:
  struct Waiter;
  struct Account {
    ResourceKey key;
    std::uint64_t capacity = 0;
    std::uint64_t used = 0;
  };
  static std::vector<Account>::iterator lower_bound_of(std::vector<Account>& accounts, ResourceKey key) noexcept;
  // Finds the account of `key`: a configured one, or (with mutex_ held)
  // the account of an exclusivity token made by add_token_accounts.
  Account* find_account(ResourceKey key) noexcept;
  const Account* find_account(ResourceKey key) const noexcept;
  // Makes the capacity-1 accounts of the request's unconfigured tokens
  // (mutex_ held); false when out of memory.
  bool add_token_accounts(std::span<const ResourceAmount> request) noexcept;
  bool accounts_any(std::span<const ResourceAmount> request) const noexcept;
  bool fits(std::span<const ResourceAmount> request) const noexcept;
  bool blocked_by_earlier(const Waiter* self, std::span<const ResourceAmount> request) const noexcept;
  void take(std::span<const ResourceAmount> request) noexcept;
  void grant_waiters() noexcept;

  std::vector<Account> accounts_;         // sorted by key; fixed after construction
  alignas(64) mutable std::mutex mutex_;  // apart from the vtable and accounts_, read without it
  std::vector<Account> tokens_;           // unconfigured exclusivity tokens seen so far, sorted by key
  Waiter* head_ = nullptr;                // arrival order
  Waiter* tail_ = nullptr;
  std::size_t waiting_ = 0;
  std::uint64_t grants_ = 0;
};

}  // namespace tenferro::runtime
