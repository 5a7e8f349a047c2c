// The process-unique id counter (see Note [The unique-id counter] in ids.h).
#include "tenferro/base/ids.h"

#include <atomic>

namespace tenferro {

std::uint64_t next_unique_id() noexcept {
  // Starts above the reserved well-known ids (kHostStorageDomain etc.).
  static std::atomic<std::uint64_t> counter{1024};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tenferro
