// FifoResourceArbiter: atomic multi-resource grants with per-resource FIFO
// queues (Note [Atomic leases], Note [Starvation-free admission]).
#include "tenferro/runtime/admission.h"

#include <algorithm>

#include <fmt/format.h>

#include "tenferro/base/assert.h"

namespace tenferro::runtime {

std::string ResourceKey::to_string() const {
  switch (kind) {
    case ResourceKind::kMemoryBytes:
      return fmt::format("memory(storage domain {})", id);
    case ResourceKind::kCpuThreads:
      return fmt::format("cpu_threads(domain {})", id);
    case ResourceKind::kDeviceStreams:
      return fmt::format("device_streams(device {})", id);
    case ResourceKind::kExclusive:
      return fmt::format("exclusive({})", id);
  }
  return "unknown";
}

bool is_canonical_request(std::span<const ResourceAmount> request) noexcept {
  for (std::size_t i = 1; i < request.size(); ++i)
    if (!(request[i - 1].key < request[i].key)) return false;
  return true;
}

// A queued request; lives on the waiting thread's stack.
struct FifoResourceArbiter::Waiter {
  std::span<const ResourceAmount> request;
  bool granted = false;
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  std::condition_variable wake;
};

FifoResourceArbiter::FifoResourceArbiter(std::vector<ResourceAmount> capacities) {
  accounts_.reserve(capacities.size());
  for (const ResourceAmount& c : capacities) accounts_.push_back(Account{c.key, c.amount, 0});
  std::sort(accounts_.begin(), accounts_.end(), [](const Account& a, const Account& b) { return a.key < b.key; });
}

FifoResourceArbiter::~FifoResourceArbiter() { TENFERRO_ASSERT(head_ == nullptr); }

std::vector<FifoResourceArbiter::Account>::iterator FifoResourceArbiter::lower_bound_of(std::vector<Account>& accounts,
                                                                                        ResourceKey key) noexcept {
  return std::lower_bound(accounts.begin(), accounts.end(), key,
                          [](const Account& a, ResourceKey k) { return a.key < k; });
}

FifoResourceArbiter::Account* FifoResourceArbiter::find_account(ResourceKey key) noexcept {
  auto it = lower_bound_of(accounts_, key);
  if (it != accounts_.end() && it->key == key) return &*it;
  if (key.kind != ResourceKind::kExclusive) return nullptr;
  it = lower_bound_of(tokens_, key);
  return (it != tokens_.end() && it->key == key) ? &*it : nullptr;
}

bool FifoResourceArbiter::add_token_accounts(std::span<const ResourceAmount> request) noexcept {
  for (const ResourceAmount& r : request) {
    if (r.key.kind != ResourceKind::kExclusive || find_account(r.key) != nullptr) continue;
    try {
      tokens_.insert(lower_bound_of(tokens_, r.key), Account{r.key, 1, 0});
    } catch (const std::bad_alloc&) {
      return false;
    }
  }
  return true;
}

const FifoResourceArbiter::Account* FifoResourceArbiter::find_account(ResourceKey key) const noexcept {
  return const_cast<FifoResourceArbiter*>(this)->find_account(key);
}

std::optional<std::uint64_t> FifoResourceArbiter::capacity(ResourceKey key) const noexcept {
  if (key.kind == ResourceKind::kExclusive) {
    std::lock_guard<std::mutex> lock(mutex_);  // tokens_ grows under it
    const Account* a = find_account(key);
    return a == nullptr ? 1 : a->capacity;
  }
  const Account* a = find_account(key);
  if (a == nullptr) return std::nullopt;
  return a->capacity;
}

std::optional<std::uint64_t> FifoResourceArbiter::available(ResourceKey key) const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const Account* a = find_account(key);
  if (a == nullptr) return key.kind == ResourceKind::kExclusive ? std::optional<std::uint64_t>(1) : std::nullopt;
  return a->capacity - a->used;
}

std::size_t FifoResourceArbiter::waiting() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_;
}

std::uint64_t FifoResourceArbiter::grants() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return grants_;
}

bool FifoResourceArbiter::accounts_any(std::span<const ResourceAmount> request) const noexcept {
  for (const ResourceAmount& r : request) {
    if (r.key.kind == ResourceKind::kExclusive) return true;  // always accounted (tokens_ is not read here)
    if (!accounts_.empty() && find_account(r.key) != nullptr) return true;
  }
  return false;
}

bool FifoResourceArbiter::fits(std::span<const ResourceAmount> request) const noexcept {
  for (const ResourceAmount& r : request) {
    const Account* a = find_account(r.key);
    if (a != nullptr && a->capacity - a->used < r.amount) return false;
  }
  return true;
}

// True when a request queued before `self` (all of them when self is null)
// names an accounted resource of `request`.
bool FifoResourceArbiter::blocked_by_earlier(const Waiter* self,
                                             std::span<const ResourceAmount> request) const noexcept {
  for (const Waiter* w = head_; w != nullptr && w != self; w = w->next) {
    for (const ResourceAmount& mine : request) {
      if (find_account(mine.key) == nullptr) continue;
      for (const ResourceAmount& theirs : w->request)
        if (theirs.key == mine.key) return true;
    }
  }
  return false;
}

void FifoResourceArbiter::take(std::span<const ResourceAmount> request) noexcept {
  for (const ResourceAmount& r : request) {
    Account* a = find_account(r.key);
    if (a != nullptr) a->used += r.amount;
  }
  ++grants_;
}

void FifoResourceArbiter::grant_waiters() noexcept {
  for (Waiter* w = head_; w != nullptr;) {
    Waiter* next = w->next;
    if (!blocked_by_earlier(w, w->request) && fits(w->request)) {
      take(w->request);
      w->granted = true;
      if (w->prev != nullptr) w->prev->next = w->next;
      if (w->next != nullptr) w->next->prev = w->prev;
      if (head_ == w) head_ = w->next;
      if (tail_ == w) tail_ = w->prev;
      --waiting_;
      w->wake.notify_one();
    }
    w = next;
  }
}

Status FifoResourceArbiter::acquire(std::span<const ResourceAmount> request,
                                    const std::atomic<bool>* cancelled) noexcept {
  TENFERRO_ASSERT(is_canonical_request(request));
  if (!accounts_any(request)) return ok_status();  // Note [Unaccounted requests]
  std::unique_lock<std::mutex> lock(mutex_);
  if (!add_token_accounts(request)) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue,
                      "expected memory for an exclusivity token's account, found none");
  }
  for (const ResourceAmount& r : request) {
    const Account* a = find_account(r.key);
    if (a != nullptr && r.amount > a->capacity) {
      return make_error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue,
                        "expected at most {} of {}, found a request for {}", a->capacity, r.key.to_string(), r.amount);
    }
  }
  if (!blocked_by_earlier(nullptr, request) && fits(request)) {
    take(request);
    return ok_status();
  }
  Waiter self;
  self.request = request;
  self.prev = tail_;
  if (tail_ != nullptr) tail_->next = &self;
  tail_ = &self;
  if (head_ == nullptr) head_ = &self;
  ++waiting_;
  for (;;) {
    if (self.granted) return ok_status();
    if (cancelled != nullptr && cancelled->load(std::memory_order_acquire)) {
      if (self.prev != nullptr) self.prev->next = self.next;
      if (self.next != nullptr) self.next->prev = self.prev;
      if (head_ == &self) head_ = self.next;
      if (tail_ == &self) tail_ = self.prev;
      --waiting_;
      grant_waiters();  // our departure may unblock later requests
      return make_error(ErrorCode::kCancelled, ErrorStage::kEnqueue,
                        "expected a resource grant, found the request cancelled while queued");
    }
    self.wake.wait(lock);
  }
}

bool FifoResourceArbiter::try_acquire(std::span<const ResourceAmount> request) noexcept {
  TENFERRO_ASSERT(is_canonical_request(request));
  if (!accounts_any(request)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!add_token_accounts(request) || blocked_by_earlier(nullptr, request) || !fits(request)) return false;
  take(request);
  return true;
}

void FifoResourceArbiter::release(std::span<const ResourceAmount> request) noexcept {
  if (!accounts_any(request)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const ResourceAmount& r : request) {
    Account* a = find_account(r.key);
    if (a != nullptr) {
      TENFERRO_ASSERT(a->used >= r.amount);
      a->used -= r.amount;
    }
  }
  grant_waiters();
}

void FifoResourceArbiter::wake_waiters() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Waiter* w = head_; w != nullptr; w = w->next) w->wake.notify_one();
}

}  // namespace tenferro::runtime
