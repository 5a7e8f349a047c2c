// What this tenferro binary was built from and how (for `tenferro info` and
// bug reports). Values are fixed at configure time.
#pragma once

#include <string>
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
  /// BLAS, LAPACK) for the configured install prefix; searched last (Note
  /// [Locating provider files]). A relocated installation passes the module
  /// directory explicitly (the providers' `module_dir` options).
  std::string_view installed_module_dir;
  /// Where `cmake --install` puts tenferro's data files (the linalg provider
  /// table); searched as installed_module_dir is.
  std::string_view installed_data_dir;
};

/// The build configuration of this binary. Thread-safe.
const BuildInfo& build_info() noexcept;

// Note [Locating provider files]
// The dlopen'ed provider modules and the data files are searched, first to
// last: in the directory of the binary this code is linked into (the
// executable, or the shared object such as the Python extension: a package
// built by `pip install .` keeps its modules and data next to it, wherever
// pip puts it), in the build tree (a path fixed at configure time), and in
// the configured install directory. A caller's explicit directory (the
// providers' options) bypasses the search.

/// The directory of the executable or shared object this function is linked
/// into; empty when the loader cannot say. Thread-safe.
std::string loaded_binary_dir();
/// The directory to load `file` from (Note [Locating provider files]): the
/// first of loaded_binary_dir(), `build_dir` and `installed_dir` that holds
/// it, else `installed_dir` (so that the error names where it should be).
std::string locate_provider_file(std::string_view file, std::string_view build_dir, std::string_view installed_dir);

}  // namespace tenferro
