// property_violated: the single way a fuzz target reports a broken
// property; libFuzzer saves the input that reached it.
#include "fuzz_input.h"

#include <cstdio>
#include <cstdlib>

namespace tenferro::fuzz {

void property_violated(const char* what, std::string_view detail) {
  std::fprintf(stderr, "fuzz property violated: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace tenferro::fuzz
