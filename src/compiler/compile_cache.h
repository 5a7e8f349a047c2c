// The compile cache behind GraphCompiler (Note [Compile cache] in
// graph_compiler.h). Private to the compiler component.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/program/semantic_transform.h"

namespace tenferro::compiler {
namespace internal {

/// The compiler options as a cache key: flags and ordered transform
/// identities.
struct OptionsKey {
  std::uint8_t flags = 0;
  std::vector<program::TransformIdentity> transforms;

  static OptionsKey of(const CompilerOptions& options);
  std::uint64_t hash() const noexcept;
  friend bool operator==(const OptionsKey&, const OptionsKey&) = default;
};

/// What a hit returns.
struct CacheHit {
  std::shared_ptr<const program::SemanticProgram> compiled;
  CompileMetrics metrics;
};

}  // namespace internal

/// LRU cache bounded by entries and bytes; thread-safe (one mutex, never
/// held while compiling).
class GraphCompiler::Cache {
 public:
  explicit Cache(CompileCacheConfig config) : config_(config) {}

  /// The entry for (traced structure, options); counts a hit or a miss.
  std::optional<internal::CacheHit> find(const program::SemanticProgram& traced, const internal::OptionsKey& options);
  /// Inserts unless an equal entry exists; evicts beyond the bounds.
  void insert(std::shared_ptr<const program::SemanticProgram> traced, internal::OptionsKey options,
              std::shared_ptr<const program::SemanticProgram> compiled, const CompileMetrics& metrics);
  CompileCacheStats stats() const;
  void clear();
  const CompileCacheConfig& config() const noexcept { return config_; }

 private:
  struct Entry {
    std::uint64_t key;
    std::shared_ptr<const program::SemanticProgram> traced;
    internal::OptionsKey options;
    std::shared_ptr<const program::SemanticProgram> compiled;
    CompileMetrics metrics;
    std::size_t bytes;
  };
  using Lru = std::list<Entry>;  // front: most recently used

  static std::uint64_t key_of(const program::SemanticProgram& traced, const internal::OptionsKey& options) noexcept;
  Lru::iterator lookup(std::uint64_t key, const program::SemanticProgram& traced, const internal::OptionsKey& options);
  void erase(Lru::iterator it);

  const CompileCacheConfig config_;
  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::uint64_t, std::vector<Lru::iterator>> buckets_;
  CompileCacheStats stats_;
};

}  // namespace tenferro::compiler
