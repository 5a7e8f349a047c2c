// CpuSet: bit operations and the cpulist text form.
#include "tenferro/cpu/domains/cpu_set.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>

#include "tenferro/base/assert.h"

namespace tenferro::cpu {
namespace {

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A CPU number in [0, kMaxCpus), or -1.
int parse_cpu(std::string_view s) {
  s = strip(s);
  int value = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < 0 || value >= CpuSet::kMaxCpus) {
    return -1;
  }
  return value;
}

}  // namespace

CpuSet::CpuSet(std::initializer_list<int> cpus) {
  for (int cpu : cpus) add(cpu);
}

CpuSet CpuSet::range(int first, int last) {
  TENFERRO_CHECK(0 <= first && first <= last && last < kMaxCpus);
  CpuSet set;
  for (int cpu = first; cpu <= last; ++cpu) set.add(cpu);
  return set;
}

CpuSet CpuSet::from_words(std::span<const std::uint64_t> words) {
  CpuSet set;
  const std::size_t n = std::min<std::size_t>(words.size(), kMaxCpus / kWordBits);
  set.words_.assign(words.first(n));
  set.trim();
  return set;
}

Result<CpuSet> CpuSet::parse(std::string_view cpulist) {
  CpuSet set;
  if (strip(cpulist).empty()) return set;
  std::string_view rest = cpulist;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    const int first = parse_cpu(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : parse_cpu(item.substr(dash + 1));
    if (first < 0 || last < first) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "cpulist '{}': expected items 'N' or 'N-M' with 0 <= N <= M < {}, found '{}'", cpulist,
                        kMaxCpus, strip(item));
    }
    for (int cpu = first; cpu <= last; ++cpu) set.add(cpu);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return set;
}

void CpuSet::add(int cpu) {
  TENFERRO_CHECK(cpu >= 0 && cpu < kMaxCpus);
  const auto w = static_cast<std::size_t>(cpu / kWordBits);
  if (words_.size() <= w) words_.resize(w + 1, 0);
  words_[w] |= std::uint64_t{1} << (cpu % kWordBits);
}

void CpuSet::remove(int cpu) noexcept {
  if (cpu < 0) return;
  const auto w = static_cast<std::size_t>(cpu / kWordBits);
  if (w >= words_.size()) return;
  words_[w] &= ~(std::uint64_t{1} << (cpu % kWordBits));
  trim();
}

bool CpuSet::contains(int cpu) const noexcept {
  if (cpu < 0) return false;
  return (word(static_cast<std::size_t>(cpu / kWordBits)) >> (cpu % kWordBits)) & 1u;
}

bool CpuSet::empty() const noexcept { return words_.empty(); }

int CpuSet::count() const noexcept {
  int n = 0;
  for (std::uint64_t w : words_) n += std::popcount(w);
  return n;
}

int CpuSet::next(int after) const noexcept {
  int cpu = after + 1;
  if (cpu < 0) cpu = 0;
  for (auto w = static_cast<std::size_t>(cpu / kWordBits); w < words_.size(); ++w) {
    std::uint64_t bits = words_[w];
    if (w == static_cast<std::size_t>(cpu / kWordBits)) bits &= ~std::uint64_t{0} << (cpu % kWordBits);
    if (bits != 0) return static_cast<int>(w) * kWordBits + std::countr_zero(bits);
  }
  return -1;
}

int CpuSet::last() const noexcept {
  if (words_.empty()) return -1;
  const std::size_t w = words_.size() - 1;
  return static_cast<int>(w) * kWordBits + (kWordBits - 1 - std::countl_zero(words_[w]));
}

std::vector<int> CpuSet::to_vector() const {
  std::vector<int> cpus;
  cpus.reserve(static_cast<std::size_t>(count()));
  for (int cpu = first(); cpu >= 0; cpu = next(cpu)) cpus.push_back(cpu);
  return cpus;
}

bool CpuSet::intersects(const CpuSet& other) const noexcept {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  for (std::size_t i = 0; i < n; ++i) {
    if ((words_[i] & other.words_[i]) != 0) return true;
  }
  return false;
}

bool CpuSet::is_subset_of(const CpuSet& other) const noexcept {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if ((words_[i] & ~other.word(i)) != 0) return false;
  }
  return true;
}

CpuSet CpuSet::operator|(const CpuSet& other) const {
  CpuSet out;
  out.words_.resize(std::max(words_.size(), other.words_.size()), 0);
  for (std::size_t i = 0; i < out.words_.size(); ++i) out.words_[i] = word(i) | other.word(i);
  return out;
}

CpuSet CpuSet::operator&(const CpuSet& other) const {
  CpuSet out;
  out.words_.resize(std::min(words_.size(), other.words_.size()), 0);
  for (std::size_t i = 0; i < out.words_.size(); ++i) out.words_[i] = words_[i] & other.words_[i];
  out.trim();
  return out;
}

CpuSet CpuSet::minus(const CpuSet& other) const {
  CpuSet out = *this;
  for (std::size_t i = 0; i < out.words_.size(); ++i) out.words_[i] &= ~other.word(i);
  out.trim();
  return out;
}

std::string CpuSet::to_string() const {
  std::string out;
  int cpu = first();
  while (cpu >= 0) {
    int end = cpu;
    while (contains(end + 1)) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (end > cpu) {
      out += '-';
      out += std::to_string(end);
    }
    cpu = next(end);
  }
  return out;
}

bool operator==(const CpuSet& a, const CpuSet& b) noexcept { return a.words_ == b.words_; }

void CpuSet::trim() noexcept {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace tenferro::cpu
