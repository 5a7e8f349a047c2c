// SmallLru: the few string-keyed entries an extension module keeps per
// object (compiled slicings of tenferro.einsum, planned splits of
// tenferro.mpi): most recently used first, a linear search (a handful of
// entries), the least recently used dropped beyond the capacity.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <utility>

namespace tenferro::python {

/// See the file comment. Not thread-safe; entries stay where they are (a
/// find moves the node, not the value) until evicted or cleared.
template <class V>
class SmallLru {
 public:
  explicit SmallLru(std::size_t capacity) noexcept : capacity_(capacity) {}

  /// The entry for `key`, now the most recently used; nullptr when absent.
  V* find(std::string_view key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return &entries_.front().second;
      }
    }
    return nullptr;
  }
  /// Adds `value` as the most recently used, dropping the least recently
  /// used when full.
  V& insert(std::string key, V value) {
    if (entries_.size() >= capacity_) entries_.pop_back();
    entries_.emplace_front(std::move(key), std::move(value));
    return entries_.front().second;
  }
  std::size_t size() const noexcept { return entries_.size(); }
  void clear() noexcept { entries_.clear(); }

 private:
  std::size_t capacity_;
  std::list<std::pair<std::string, V>> entries_;
};

}  // namespace tenferro::python
