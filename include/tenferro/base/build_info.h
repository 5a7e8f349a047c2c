// What this tenferro binary was built from and how (for `tenferro info` and
// bug reports). Values are fixed at configure time.
#pragma once

#include <string_view>

namespace tenferro {

struct BuildInfo {
  std::string_view version;
  std::string_view git_revision;  ///< "unknown" outside a git checkout
  std::string_view build_type;
  std::string_view compiler;  ///< id and version, e.g. "GNU 12.2.0"
  std::string_view cxx_flags;
  std::string_view sanitizers;  ///< empty when none
  /// The -march target of the code outside the runtime-dispatched kernels
  /// (the TENFERRO_ARCH configure option): "native", "x86-64-v3", ..., or
  /// "none" for the compiler's default.
  std::string_view arch;
  bool assertions;  ///< TENFERRO_ASSERT active
  /// Where `cmake --install` puts the dlopen'ed provider modules (external
  /// BLAS, LAPACK) for the configured install prefix; searched when a
  /// module is not in the build tree. A relocated installation passes the
  /// module directory explicitly (the providers' `module_dir` options).
  std::string_view installed_module_dir;
  /// Where `cmake --install` puts tenferro's data files (the linalg provider
  /// table); searched when a file is not in the build tree, relocated as
  /// installed_module_dir is.
  std::string_view installed_data_dir;
};

/// The build configuration of this binary. Thread-safe.
const BuildInfo& build_info() noexcept;

}  // namespace tenferro
