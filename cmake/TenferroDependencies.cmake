# Third-party dependencies, all from Debian 12 packages (scripts/setup.sh
# installs them). Each is found once here and used through an imported target.
include(GNUInstallDirs)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
find_package(fmt 9 CONFIG REQUIRED)
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
find_package(CLI11 2 CONFIG REQUIRED)
# oneTBB task arenas: CPU executors and the kernels' test/bench ParallelContext.
find_package(TBB 2021 CONFIG REQUIRED)
# hwloc: CPU topology, the process's allowed CPUs, thread and memory binding.
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.5)
if(TENFERRO_BUILD_TESTS)
  find_package(GTest 1.12 CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(TENFERRO_BUILD_BENCHMARKS)
  find_package(benchmark 1.7 CONFIG REQUIRED)
endif()

# Python with numpy serves as an independent numeric reference in tests. The
# interpreter on PATH may be a pyenv shim without numpy; Debian's is the one.
find_program(TENFERRO_REFERENCE_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)

# Directory holding ../shared/bench/instances when the checkout sits next to
# it; tests that need it skip when it is absent.
get_filename_component(_tf_shared "${PROJECT_SOURCE_DIR}/../shared" ABSOLUTE)
set(TENFERRO_SHARED_DIR "${_tf_shared}" CACHE PATH "Directory with bench/instances (optional)")
