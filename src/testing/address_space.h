// Address-space limits for death tests (RLIMIT_AS, as `ulimit -v` sets
// it): the tests that check that a component answers kResourceExhausted
// instead of aborting or hanging when little address space is left.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace tenferro::testing {

/// Whether this is a sanitizer build: the sanitizers reserve address space
/// of their own, which an address-space limit breaks (such tests skip).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// This process's address space in bytes (VmSize; 0 when unreadable).
inline std::uint64_t address_space_bytes() {
  unsigned long pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%lu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

/// Limits this process's address space to what it uses now plus `headroom`
/// bytes (the hard limit stays); whether setrlimit accepted it.
inline bool limit_address_space(std::uint64_t headroom) {
  const rlimit limit{address_space_bytes() + headroom, RLIM_INFINITY};
  return setrlimit(RLIMIT_AS, &limit) == 0;
}

}  // namespace tenferro::testing
