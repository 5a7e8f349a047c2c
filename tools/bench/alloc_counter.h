// Heap-allocation counting for benchmarks of the `tenferro` program.
//
// Note [Benchmark allocation counter]
// alloc_counter.cpp replaces the global operator new of the `tenferro`
// executable (and only of it; libraries never do) so suites can report
// allocations per call (unit "allocs"). The counter is a relaxed atomic:
// instrumentation of the benchmark binary, not library state. Memory from
// malloc called directly is not counted.
#pragma once

#include <cstdint>

namespace tenferro::bench {

/// Global operator new calls made by this process so far (always 0 under
/// ThreadSanitizer, whose runtime owns operator new).
std::uint64_t allocation_count() noexcept;

}  // namespace tenferro::bench
