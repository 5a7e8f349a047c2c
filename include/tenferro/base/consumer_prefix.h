// The install prefix a program that links tenferro's static libraries was
// compiled against (Note [The prefix of the headers]).
//
// Note [The prefix of the headers]
// A program linking the static C++ libraries carries their code but not
// where their install put the provider modules and data files: an install
// under any `cmake --install --prefix P` is found by the program only
// through what the program was compiled against. Every translation unit of
// such a program that includes tenferro's headers (through status.h) gets
// a weak, hidden definition of tenferro_consumer_header_path(), which
// returns this file's path as the compiler found it,
// "P/include/tenferro/base/consumer_prefix.h": with CMake's imported
// targets built from TENFERRO_CONSUMER_INCLUDE_DIR, which the package's
// config file defines as its own P/include (so -fmacro-prefix-map and flags that
// rewrite __FILE__ do not hide it), otherwise __FILE__ (pkg-config passes an
// absolute include directory when PKG_CONFIG_PATH is absolute); Note [Locating provider
// files] searches P's module and data directories after the program's own
// directory, before the configured install and the build tree. Moving the
// install needs a rebuild of the program, as for any path it was built
// against. tenferro's own binaries (TENFERRO_BUILDING) do not define it:
// the reference is weak, so it is null there.
#pragma once

#if !defined(TENFERRO_BUILDING) && (defined(__GNUC__) || defined(__clang__))
extern "C" __attribute__((weak, visibility("hidden"))) const char* tenferro_consumer_header_path() noexcept;
extern "C" __attribute__((weak, visibility("hidden"))) const char* tenferro_consumer_header_path() noexcept {
#ifdef TENFERRO_CONSUMER_INCLUDE_DIR
  return TENFERRO_CONSUMER_INCLUDE_DIR "/tenferro/base/consumer_prefix.h";
#else
  return __FILE__;
#endif
}
#endif
