// Heap-allocation counting for test and benchmark programs.
//
// Note [Counting operator new]
// counting_new.cpp replaces the global operator new/delete of every program
// that links the object library tenferro_counting_new (the runtime's and the
// CPU engine's allocation tests, the `tenferro` tool for its benchmarks);
// libraries never do. A program's replacement counts every operator new
// call into one relaxed atomic (instrumentation of that program, not library
// state); tests read the difference around the code they check. Memory from
// malloc called directly is not counted. ThreadSanitizer's runtime defines
// operator new itself, so under TSan nothing is replaced, the count stays 0
// and kCountsAllocations is false.
#pragma once

#include <cstdint>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TENFERRO_NO_COUNTING_NEW 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TENFERRO_NO_COUNTING_NEW 1
#endif

namespace tenferro::testing {

#ifdef TENFERRO_NO_COUNTING_NEW
inline constexpr bool kCountsAllocations = false;
#else
inline constexpr bool kCountsAllocations = true;
#endif

/// Global operator new calls made by this program so far.
std::uint64_t allocation_count() noexcept;

}  // namespace tenferro::testing
