// The compile cache (Note [Compile cache] in graph_compiler.h).
#include "compile_cache.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "tenferro/base/hash.h"

namespace tenferro::compiler {
namespace internal {

OptionsKey OptionsKey::of(const CompilerOptions& options) {
  OptionsKey key;
  key.flags =
      static_cast<std::uint8_t>((options.canonicalize ? 1 : 0) | (options.eliminate_common_subexpressions ? 2 : 0) |
                                (options.prune_extension_outputs ? 4 : 0));
  for (const auto& t : options.transforms) {
    if (t) key.transforms.push_back(t->identity());
  }
  return key;
}

std::uint64_t OptionsKey::hash() const noexcept {
  std::uint64_t h = flags;
  for (const program::TransformIdentity& t : transforms) {
    h = hashing::hash_combine(h, std::hash<std::string_view>()(t.name));
    h = hashing::hash_combine(h, t.options_hash);
  }
  return h;
}

}  // namespace internal

std::uint64_t GraphCompiler::Cache::key_of(const program::SemanticProgram& traced,
                                           const internal::OptionsKey& options) noexcept {
  return hashing::hash_combine(traced.fingerprint().prefix64(), options.hash());
}

GraphCompiler::Cache::Lru::iterator GraphCompiler::Cache::lookup(std::uint64_t key,
                                                                 const program::SemanticProgram& traced,
                                                                 const internal::OptionsKey& options) {
  auto bucket = buckets_.find(key);
  if (bucket == buckets_.end()) return lru_.end();
  for (Lru::iterator it : bucket->second) {
    // Within a bucket: the full fingerprint, then exact structure.
    if (it->options == options && it->traced->fingerprint() == traced.fingerprint() &&
        program::structurally_equal(*it->traced, traced)) {
      return it;
    }
  }
  return lru_.end();
}

std::optional<internal::CacheHit> GraphCompiler::Cache::find(const program::SemanticProgram& traced,
                                                             const internal::OptionsKey& options) {
  const std::uint64_t key = key_of(traced, options);
  std::lock_guard<std::mutex> lock(mutex_);
  Lru::iterator it = lookup(key, traced, options);
  if (it == lru_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it);
  return internal::CacheHit{it->compiled, it->metrics};
}

void GraphCompiler::Cache::erase(Lru::iterator it) {
  auto bucket = buckets_.find(it->key);
  auto& list = bucket->second;
  list.erase(std::find(list.begin(), list.end(), it));
  if (list.empty()) buckets_.erase(bucket);
  stats_.bytes -= it->bytes;
  --stats_.entries;
  lru_.erase(it);
}

void GraphCompiler::Cache::insert(std::shared_ptr<const program::SemanticProgram> traced, internal::OptionsKey options,
                                  std::shared_ptr<const program::SemanticProgram> compiled,
                                  const CompileMetrics& metrics) {
  // A program the pipeline left unchanged is the traced one: count it once.
  const std::size_t bytes =
      traced->canonical_form().size() + (compiled == traced ? 0 : compiled->canonical_form().size());
  if (bytes > config_.max_bytes || config_.max_entries == 0) return;
  const std::uint64_t key = key_of(*traced, options);
  std::lock_guard<std::mutex> lock(mutex_);
  if (lookup(key, *traced, options) != lru_.end()) return;  // another thread was first
  lru_.push_front(Entry{key, std::move(traced), std::move(options), std::move(compiled), metrics, bytes});
  buckets_[key].push_back(lru_.begin());
  ++stats_.entries;
  stats_.bytes += bytes;
  while (stats_.entries > config_.max_entries || stats_.bytes > config_.max_bytes) {
    erase(std::prev(lru_.end()));
    ++stats_.evictions;
  }
}

CompileCacheStats GraphCompiler::Cache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void GraphCompiler::Cache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  buckets_.clear();
  stats_.entries = 0;
  stats_.bytes = 0;
}

}  // namespace tenferro::compiler
