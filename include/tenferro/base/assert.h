// Invariant checks. A failed TENFERRO_ASSERT or TENFERRO_CHECK is a bug in
// tenferro, never a consequence of user input: user errors are typed Status
// values (see status.h). TENFERRO_ASSERT compiles away in release builds;
// TENFERRO_CHECK is always on and reserved for cheap checks whose failure
// would otherwise corrupt memory.
#pragma once

namespace tenferro::internal {
[[noreturn]] void assert_fail(const char* condition, const char* file, int line) noexcept;
}  // namespace tenferro::internal

#define TENFERRO_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::tenferro::internal::assert_fail(#cond, __FILE__, __LINE__))

#ifdef NDEBUG
#define TENFERRO_ASSERT(cond) static_cast<void>(0)
#else
#define TENFERRO_ASSERT(cond) TENFERRO_CHECK(cond)
#endif
