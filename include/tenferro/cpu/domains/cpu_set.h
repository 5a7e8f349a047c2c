// CpuSet: an exact set of logical CPU (OS processor) numbers. Resource
// domains, topology nodes and the process's allowed CPUs are all CpuSets;
// the text form is the Linux cpulist syntax ("0-3,8,10-11").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"

namespace tenferro::cpu {

/// A set of OS CPU numbers in [0, kMaxCpus). Value type; thread-compatible.
/// Holds up to 256 CPUs without touching the heap.
class CpuSet {
 public:
  /// Largest CPU number + 1 a set may hold (Linux's default CONFIG_NR_CPUS
  /// maximum); parse() rejects larger numbers.
  static constexpr int kMaxCpus = 8192;

  CpuSet() noexcept = default;
  /// The CPUs listed; every one must be in [0, kMaxCpus) (checked).
  CpuSet(std::initializer_list<int> cpus);
  /// CPUs first..last inclusive; precondition 0 <= first <= last < kMaxCpus.
  static CpuSet range(int first, int last);
  /// Parses a cpulist such as "0-3,8,10-11" (whitespace around items is
  /// allowed; "" is the empty set). kInvalidArgument names the bad item.
  static Result<CpuSet> parse(std::string_view cpulist);

  /// The set whose CPU c is bit c % 64 of words[c / 64] (the layout of
  /// cpu_set_t and hwloc bitmaps on 64-bit Linux); CPUs >= kMaxCpus are dropped.
  static CpuSet from_words(std::span<const std::uint64_t> words);
  /// The same layout, without trailing zero words.
  std::span<const std::uint64_t> words() const noexcept { return words_.span(); }

  /// Adds `cpu`; precondition 0 <= cpu < kMaxCpus.
  void add(int cpu);
  void remove(int cpu) noexcept;
  bool contains(int cpu) const noexcept;
  bool empty() const noexcept;
  int count() const noexcept;
  /// The smallest CPU, or -1 when empty.
  int first() const noexcept { return next(-1); }
  /// The smallest CPU greater than `after`, or -1.
  int next(int after) const noexcept;
  /// The largest CPU, or -1 when empty.
  int last() const noexcept;
  std::vector<int> to_vector() const;

  bool intersects(const CpuSet& other) const noexcept;
  bool is_subset_of(const CpuSet& other) const noexcept;
  CpuSet operator|(const CpuSet& other) const;
  CpuSet operator&(const CpuSet& other) const;
  /// The CPUs of this set that are not in `other`.
  CpuSet minus(const CpuSet& other) const;

  /// The cpulist form, "" for the empty set.
  std::string to_string() const;

  friend bool operator==(const CpuSet& a, const CpuSet& b) noexcept;

 private:
  static constexpr int kWordBits = 64;
  void trim() noexcept;
  std::uint64_t word(std::size_t i) const noexcept { return i < words_.size() ? words_[i] : 0; }
  // Bit c of words_[c / 64] is CPU c; no trailing zero words.
  SmallVector<std::uint64_t, 4> words_;
};

}  // namespace tenferro::cpu

/// Formats as the cpulist, "{}" for the empty set (messages stay readable).
template <>
struct fmt::formatter<tenferro::cpu::CpuSet> : fmt::formatter<std::string_view> {
  auto format(const tenferro::cpu::CpuSet& set, format_context& ctx) const {
    const std::string text = set.empty() ? std::string("{}") : set.to_string();
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};
