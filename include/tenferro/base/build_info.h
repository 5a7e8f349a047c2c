// What this tenferro binary was built from and how (for `tenferro info` and
// bug reports). Values are fixed at configure time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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
  /// BLAS, LAPACK) for the configured install prefix (Note [Locating
  /// provider files]). A caller may name another directory explicitly (the
  /// providers' `module_dir` options).
  std::string_view installed_module_dir;
  /// Where `cmake --install` puts tenferro's data files (the linalg provider
  /// table); searched as installed_module_dir is.
  std::string_view installed_data_dir;
  /// The build tree this binary was configured in, and its source tree.
  std::string_view build_dir;
  std::string_view source_dir;
  /// The install layout relative to the prefix (CMAKE_INSTALL_LIBDIR and
  /// friends; empty where configured as an absolute path): the provider
  /// modules, the data files, the shared libraries, the Python package and
  /// the programs. A binary found in one of the last three gives the prefix
  /// it was installed under, wherever that is (Note [Locating provider
  /// files]).
  std::string_view module_dir_in_prefix;
  std::string_view data_dir_in_prefix;
  std::string_view library_dir_in_prefix;
  std::string_view python_package_dir_in_prefix;
  /// The headers (CMAKE_INSTALL_INCLUDEDIR; empty where absolute): a
  /// program compiled against P/<this> finds P's files (Note [The prefix of
  /// the headers] in consumer_prefix.h).
  std::string_view include_dir_in_prefix;
  /// The programs (CMAKE_INSTALL_BINDIR; empty where absolute): the
  /// `tenferro` command, which links the libraries statically.
  std::string_view program_dir_in_prefix;
};

/// The build configuration of this binary. Thread-safe.
const BuildInfo& build_info() noexcept;

// Note [Locating provider files]
// The dlopen'ed provider modules and the data files are searched, first to
// last:
//   0. the install under the prefix that the TENFERRO_PREFIX environment
//      variable names (`<P>/lib/tenferro`, `<P>/share/tenferro`), when set:
//      the user's way to point a moved install at its files;
//   1. the directory of the binary this code is linked into (the executable,
//      or the shared object such as the Python extension: a package built by
//      `pip install .` keeps its modules and data next to it, wherever pip
//      puts it);
//   2. when that directory is where an install puts shared libraries or the
//      Python package (`<P>/lib`, `<P>/lib/python3/dist-packages/tenferro`),
//      the install under that prefix P (`<P>/lib/tenferro`,
//      `<P>/share/tenferro`): an installation works wherever
//      `cmake --install --prefix` put it, without the build tree;
//   3. for a program linking the static libraries, the install under the
//      prefix P whose headers it was compiled against (Note [The prefix of
//      the headers] in consumer_prefix.h);
//   4. the configured install directory, and the build tree's copy only for
//      binaries inside the build tree (searched first there) and programs
//      compiled against the source tree's headers (a project that builds
//      tenferro as its subdirectory). An installed copy never loads a module
//      of a build tree that happens to still exist: a C++ user's audit found
//      a program built against a moved install loading the developer's
//      build tree without a sign.
// When no directory holds the file, the lookup names the install directory
// of 0, 2 or 3, or else the configured one, so that a load error says where
// the file was expected. A caller's explicit directory (the providers'
// options) bypasses the search.

/// The environment variable naming an install prefix to search first.
inline constexpr std::string_view kPrefixEnv = "TENFERRO_PREFIX";

/// The directory of the executable or shared object this function is linked
/// into, absolute and without symbolic links where the file system can
/// resolve them; empty when the loader cannot say. Thread-safe.
std::string loaded_binary_dir();

/// Which installed directory a provider file lives in.
enum class ProviderFileKind { kModule, kData };

/// Where to look for a provider file (Note [Locating provider files]).
struct ProviderFileSearch {
  std::vector<std::string> dirs;  ///< searched in this order
  std::string fallback;           ///< named when none of them holds the file
};

/// The search for a binary in `binary_dir` whose build tree keeps the file
/// in `build_file_dir`, compiled against the headers at `header_path` (the
/// path of consumer_prefix.h the program saw; empty for tenferro's own
/// binaries), with `prefix` from TENFERRO_PREFIX (empty: unset). Pure: reads
/// no file system and no environment.
ProviderFileSearch provider_file_search(std::string_view binary_dir, std::string_view build_file_dir,
                                        ProviderFileKind kind, const BuildInfo& info, std::string_view header_path = {},
                                        std::string_view prefix = {});

/// The first directory of provider_file_search(loaded_binary_dir(), ...)
/// that holds `file`, else its fallback.
std::string locate_provider_file(std::string_view file, std::string_view build_file_dir, ProviderFileKind kind);

}  // namespace tenferro
