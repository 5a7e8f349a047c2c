// The reference python (numpy, torch) for tests that compare against it.
// Test-only (tenferro::testing).
#pragma once

#include <optional>
#include <string>

namespace tenferro::testing {

/// Runs `script` with the reference python found at configure time
/// (TENFERRO_REFERENCE_PYTHON, /usr/bin/python3) and returns its stdout;
/// nullopt when there is no reference python or the script exits non-zero
/// (an import error included), so callers GTEST_SKIP(). Its stderr is
/// discarded.
std::optional<std::string> run_python(const std::string& script);

}  // namespace tenferro::testing
