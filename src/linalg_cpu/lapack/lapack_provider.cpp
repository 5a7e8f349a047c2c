// LapackLinalgProvider: loads the anchor module of one OpenBLAS build
// (Note [LAPACK provider isolation]), resolves the LAPACKE and CBLAS entry
// points in the module's dependency tree, identifies what was actually bound
// and classifies the capability from it.
#include "tenferro/linalg_cpu/lapack_provider.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "linalg_cpu/lapack/lapack_symbols.h"
#include "tenferro/base/build_info.h"
#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/gemm/external_blas.h"

#ifndef TENFERRO_LAPACK_MODULE_DIR
#define TENFERRO_LAPACK_MODULE_DIR ""
#endif

namespace tenferro::linalg {

namespace internal {

// Mirrors TenferroLapackModule in lapack_module.c (ABI version 1).
struct LapackModuleAbi {
  std::uint32_t abi_version;
  std::uint32_t lapack_int_bytes;
  int (*openblas_parallel)();
  const char* (*openblas_config)();
  int (*openblas_threads)();
  const void* lapacke_anchor;
};

struct LapackModule {
  void* handle = nullptr;
  const LapackModuleAbi* abi = nullptr;
  std::string path;
  LapackSymbols symbols;
  ~LapackModule() {
    if (handle != nullptr) dlclose(handle);
  }
};

}  // namespace internal

namespace {

constexpr std::uint32_t kAbiVersion = 1;

// Note [An OpenBLAS of our own] (lapack_provider.h): the module's own
// symbols before the process's, except under a sanitizer: one this library
// was built with, or one the program was (a sanitized program linking a
// release install), whose runtime is found in the process.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif
#else
constexpr bool kSanitizedBuild = false;
#endif

int deep_bind_flag() noexcept {
  static const int flag = [] {
    if (kSanitizedBuild) return 0;
    for (const char* runtime : {"__asan_init", "__tsan_init", "__msan_init", "__hwasan_init"}) {
      if (dlsym(RTLD_DEFAULT, runtime) != nullptr) return 0;
    }
    return RTLD_DEEPBIND;
  }();
  return flag;
}

constexpr char kElementPrefix[4] = {'s', 'd', 'c', 'z'};

// Note [An OpenBLAS of our own]: the module's threaded OpenBLAS is ours
// alone; one thread per call, and its idle pool stopped (it is restarted
// only by a call with more threads, which nothing makes). Once per process,
// as the library is.
void pin_to_one_thread(void* handle) {
  static std::once_flag once;
  std::call_once(once, [handle] {
    using SetThreads = void (*)(int);
    using Shutdown = int (*)();
    if (auto set = reinterpret_cast<SetThreads>(dlsym(handle, "openblas_set_num_threads")); set != nullptr) set(1);
    if (auto stop = reinterpret_cast<Shutdown>(dlsym(handle, "blas_thread_shutdown_")); stop != nullptr) stop();
  });
}

// Note [OpenBLAS kernels for new CPUs]
// A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU's family and model
// when it is loaded, and one older than the CPU falls back to generic ones:
// Debian 12's 0.3.21 runs its SSE3 "Prescott" kernels on an Intel Xeon of
// model 207 (Emerald Rapids) and on AMD Zen 5, although both run AVX-512
// (dgemm n = 1024: 16.5 GFLOP/s against 75.8 with OPENBLAS_CORETYPE=SkylakeX
// on the 2-vCPU Xeon VM, 2026-12-07). Every LAPACK routine then ran at a
// fraction of the machine: qr n = 1024 0.226 s against 0.079 s. The
// provider's OpenBLAS is a copy of its own (Note [An OpenBLAS of our own]),
// so the provider may choose that copy's kernels without touching anyone
// else's: when OPENBLAS_CORETYPE is unset and the copy chose kernels below
// the widest instruction set tenferro's own kernels run here
// (cpu::resolve_cpu_isa: the CPU, capped by TENFERRO_CPU_ISA), the module
// answers the copy's getenv("OPENBLAS_CORETYPE") with SkylakeX (AVX-512) or
// Haswell (AVX2) while the copy is re-initialised (gotoblas_dynamic_quit,
// gotoblas_dynamic_init), before any call ran on it. Only a build that has
// that kernel table is switched, and only with RTLD_DEEPBIND (the module's
// getenv is not the copy's otherwise). OpenBLAS's own choice is kept when
// it already runs kernels of that width (Zen, Haswell, SkylakeX,
// Cooperlake, SapphireRapids: tuned for their CPUs), and a user's
// OPENBLAS_CORETYPE always wins. LapackIdentity and `tenferro info` report
// both choices. Once per process, as the copy is.
struct OpenBlasCores {
  std::string core;             // the kernels the copy runs
  std::string openblas_choice;  // what it chose itself, when tenferro chose another
};

OpenBlasCores choose_openblas_core(void* handle) {
  static OpenBlasCores cores;
  static std::once_flag once;
  std::call_once(once, [handle] {
    using Name = char* (*)();
    using Step = void (*)();
    using SetCore = void (*)(const char*);
    const auto corename = reinterpret_cast<Name>(dlsym(handle, "openblas_get_corename"));
    if (corename == nullptr) return;
    cores.core = corename();
    const Result<cpu::CpuIsa> isa = cpu::resolve_cpu_isa(cpu::CpuIsa::kAuto);
    const std::string wider(cpu::openblas_core_for(isa.ok() ? *isa : cpu::best_cpu_isa(), cores.core));
    if (wider.empty() || deep_bind_flag() == 0 || std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
    const auto set = reinterpret_cast<SetCore>(dlsym(handle, "tenferro_lapack_set_openblas_core"));
    const auto quit = reinterpret_cast<Step>(dlsym(handle, "gotoblas_dynamic_quit"));
    const auto init = reinterpret_cast<Step>(dlsym(handle, "gotoblas_dynamic_init"));
    std::string table = "gotoblas_";  // the build has that kernel table: gotoblas_SKYLAKEX, ...
    for (char c : wider) table += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (set == nullptr || quit == nullptr || init == nullptr || dlsym(handle, table.c_str()) == nullptr) return;
    set(wider.c_str());
    quit();
    init();
    set(nullptr);
    cores.openblas_choice = cores.core;
    cores.core = corename();
  });
  return cores;
}

// Note [System BLAS outside the deep scope]
// The module's liblapacke needs the system's libblas.so.3 and
// liblapack.so.3, which need its libopenblas.so.0. Loaded first as part of
// the module's RTLD_DEEPBIND group, that libopenblas was relocated in the
// module's scope, where the renamed copy comes first: its own references
// (blas_cpu_number, its buffers) bound to the copy's. A later user of the
// system OpenBLAS (a gemm="openblas" runtime, a program's dlopen) then
// wrote into the copy: openblas_set_num_threads(2) made the copy report 2
// threads, and every linalg call of a strict runtime failed with
// kPlacementError (the C API audit of 2026-12-06). These libraries are
// therefore loaded on their own first, relocated against themselves; the
// module's group then reuses them, and the module's and liblapacke's own
// references still resolve in the copy. Failures are ignored (the module
// then loads them as before).
void preload_system_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* name : {"libblas.so.3", "liblapack.so.3"}) dlopen(name, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
  });
}

// Note [Loading under an address-space limit]
// The module's pthread OpenBLAS starts its thread pool when it is loaded,
// and each pool thread takes a buffer of its own. Under an address-space
// limit (ulimit -v) that left too little room, a pool thread retried its
// failed allocation for ever while pin_to_one_thread waited for it in
// pthread_join: the first call of the process hung (100 and 150 MiB of
// headroom above VmSize on the 2-CPU VM, 2026-12-06; 200 MiB and more
// worked), or OpenBLAS raised SIGINT itself (a KeyboardInterrupt no one
// sent; the Python concurrency audit). The module is therefore not loaded
// when RLIMIT_AS leaves less than kLoadHeadroomPerThread bytes for each CPU
// this process may use (OpenBLAS's pool size, at most 64) and one more:
// kResourceExhausted saying so, which the linalg engine reports with every
// call that needed LAPACK; a runtime created once there is room loads it.
// A module this process loaded before is not checked (its pool is stopped).
constexpr std::uint64_t kLoadHeadroomPerThread = std::uint64_t{96} << 20;

Status check_load_headroom() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return ok_status();
  std::uint64_t pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%lu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  const std::uint64_t used = pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  cpu_set_t cpus;
  const int count = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const std::uint64_t need = kLoadHeadroomPerThread * static_cast<std::uint64_t>(std::min(count, 64) + 1);
  const std::uint64_t room = limit.rlim_cur > used ? limit.rlim_cur - used : 0;
  if (room >= need) return ok_status();
  return make_error(ErrorCode::kResourceExhausted, ErrorStage::kConfiguration,
                    "LAPACK provider: expected {} MiB of address space for OpenBLAS's buffers ({} MiB for each of {} "
                    "threads), found {} MiB below the address-space limit (ulimit -v) of {} MiB; raise the limit, then "
                    "create a new runtime",
                    need >> 20, kLoadHeadroomPerThread >> 20, std::min(count, 64) + 1, room >> 20,
                    static_cast<std::uint64_t>(limit.rlim_cur) >> 20);
}

std::string loaded_file(const void* address) {
  Dl_info info;
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "unknown";
}

Result<std::unique_ptr<internal::LapackModule>> open_module(const LapackOptions& options) {
  const std::string file = fmt::format("tenferro_lapack_openblas_{}.so", to_string(options.build));
  // Note [Locating provider files].
  const std::string dir = options.module_dir.empty()
                              ? locate_provider_file(file, TENFERRO_LAPACK_MODULE_DIR, ProviderFileKind::kModule)
                              : options.module_dir;
  auto module = std::make_unique<internal::LapackModule>();
  module->path = dir + "/" + file;
  if (void* loaded = dlopen(module->path.c_str(), RTLD_LAZY | RTLD_NOLOAD); loaded != nullptr) {
    dlclose(loaded);  // loaded before: its pool is stopped already
  } else {
    TENFERRO_TRY(check_load_headroom());  // Note [Loading under an address-space limit]
  }
  if (deep_bind_flag() != 0) preload_system_blas();
  module->handle = dlopen(module->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | deep_bind_flag());
  if (module->handle == nullptr) {
    const char* why = dlerror();
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "LAPACK provider: expected a loadable module at {}, found: {}{}", module->path,
                      why != nullptr ? why : "unknown dlopen error",
                      options.module_dir.empty() ? " (name the install prefix with TENFERRO_PREFIX, or the "
                                                   "directory with LapackOptions::module_dir)"
                                                 : "");
  }
  using Entry = const internal::LapackModuleAbi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(module->handle, "tenferro_lapack_module_v1"));
  module->abi = entry != nullptr ? entry() : nullptr;
  if (module->abi == nullptr || module->abi->abi_version != kAbiVersion ||
      module->abi->lapack_int_bytes != sizeof(internal::lapack_int)) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "LAPACK provider: expected module ABI {} with a {}-byte lapack_int in {}, found {}", kAbiVersion,
                      sizeof(internal::lapack_int), module->path,
                      module->abi == nullptr ? std::string("no entry point")
                                             : fmt::format("ABI {} with {}-byte lapack_int", module->abi->abi_version,
                                                           module->abi->lapack_int_bytes));
  }
  for (int r = 0; r < internal::kNumLapackRoutines; ++r) {
    for (int t = 0; t < 4; ++t) {
      const auto routine = static_cast<internal::LapackRoutine>(r);
      const std::string symbol =
          routine == internal::kGemm || routine == internal::kSyrk
              ? fmt::format("cblas_{}{}", kElementPrefix[t], internal::lapack_routine_name(routine, t >= 2))
              : fmt::format("LAPACKE_{}{}_work", kElementPrefix[t], internal::lapack_routine_name(routine, t >= 2));
      void* fn = dlsym(module->handle, symbol.c_str());
      if (fn == nullptr) {
        return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                          "LAPACK provider: expected {} in the dependency tree of {}, found none", symbol,
                          module->path);
      }
      module->symbols.fn[r][t] = fn;
    }
  }
  return module;
}

}  // namespace

std::string_view to_string(LapackBuild build) noexcept {
  switch (build) {
    case LapackBuild::kOpenBlasSerial:
      return "serial";
    case LapackBuild::kOpenBlasPthread:
      return "pthread";
    case LapackBuild::kOpenBlasOpenMP:
      return "openmp";
  }
  return "unknown";
}

bool LapackLinalgProvider::prefers_own_symbols() noexcept { return deep_bind_flag() != 0; }

Result<std::shared_ptr<LapackLinalgProvider>> LapackLinalgProvider::load(const LapackOptions& options) {
  TENFERRO_ASSIGN_OR_RETURN(auto module, open_module(options));
  return std::shared_ptr<LapackLinalgProvider>(new LapackLinalgProvider(std::move(module)));
}

LapackLinalgProvider::LapackLinalgProvider(std::unique_ptr<internal::LapackModule> module)
    : module_(std::move(module)) {
  const internal::LapackModuleAbi& abi = *module_->abi;
  identity_.openblas_config = abi.openblas_config();
  identity_.openblas_parallel = abi.openblas_parallel();
  identity_.own_instance = dlsym(module_->handle, "tenferro_lapack_own_openblas") != nullptr;
  if (identity_.own_instance) {
    OpenBlasCores cores = choose_openblas_core(module_->handle);  // Note [OpenBLAS kernels for new CPUs]
    identity_.openblas_core = std::move(cores.core);
    identity_.openblas_own_choice = std::move(cores.openblas_choice);
  } else if (auto corename = reinterpret_cast<char* (*)()>(dlsym(module_->handle, "openblas_get_corename"))) {
    identity_.openblas_core = corename();
  }
  if (identity_.own_instance && identity_.openblas_parallel != 0) pin_to_one_thread(module_->handle);
  identity_.openblas_threads = abi.openblas_threads();
  identity_.lapack_path = loaded_file(dlsym(module_->handle, "dgesdd_"));
  identity_.lapacke_path = loaded_file(module_->symbols.fn[internal::kGesdd][1]);
  identity_.module_path = module_->path;

  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "0.3.21".
  std::string version = "unknown";
  const std::string& config = identity_.openblas_config;
  if (const std::size_t space = config.find(' '); space != std::string::npos) {
    const std::size_t end = config.find(' ', space + 1);
    version = config.substr(space + 1, end == std::string::npos ? std::string::npos : end - space - 1);
  }
  const bool serial = identity_.openblas_parallel == 0 || (identity_.own_instance && identity_.openblas_threads == 1);
  const char* threading = identity_.openblas_parallel == 0   ? "serial"
                          : identity_.openblas_parallel == 2 ? "openmp"
                                                             : "pthread";
  name_ = identity_.own_instance && identity_.openblas_parallel != 0
              ? fmt::format("lapack(openblas {} own {}, 1 thread)", version, threading)
              : fmt::format("lapack(openblas {} {})", version, threading);
  capability_.thread_count =
      serial ? cpu::ThreadCountControl::kSequential : cpu::ThreadCountControl::kGlobalOrUncontrolled;
  capability_.placement = serial ? cpu::PlacementControl::kCallingThread : cpu::PlacementControl::kExternalWorkers;
  capability_.detail = fmt::format(
      "LAPACKE {} over OpenBLAS {} {} (openblas_get_parallel()={}, {} threads{}), {} kernels{}, from {}",
      identity_.lapacke_path, version, threading, identity_.openblas_parallel, identity_.openblas_threads,
      identity_.own_instance ? "; a renamed copy of its own" : "", identity_.openblas_core,
      identity_.openblas_own_choice.empty()
          ? ""
          : fmt::format(" (chosen by tenferro: OpenBLAS chose {} for this CPU)", identity_.openblas_own_choice),
      identity_.lapack_path);
}

LapackLinalgProvider::~LapackLinalgProvider() = default;

Result<LinalgKernelPlan> LapackLinalgProvider::plan(const LinalgProblem& problem) const {
  return internal::lapack_plan(module_->symbols, name_, problem);
}

// Note [Serial OpenBLAS is not reentrant]
// Debian's serial OpenBLAS (which the default module bound before Note [An
// OpenBLAS of our own], and still does in a build without patchelf) keeps one
// process-wide pool of GEMM buffers and, built without USE_LOCKING, hands
// them out without a lock: two threads inside its LAPACK at once (two
// runtimes, or one runtime's workers running a batch of matrices) share a
// buffer and return wrong results (the concurrency audit: svd, eig, lstsq
// and pinv of 64 to 130 x 130 matrices off by up to 10 on 2 threads; the
// same with two plain C threads calling dgesdd_). Every call into a serial
// OpenBLAS therefore holds one lock. It is process-wide because the
// library's state is: one lock per provider would not keep two runtimes
// apart. It costs linalg's thread scaling with that library only; an
// OpenBLAS with its own threads (pthread, OpenMP builds) locks internally
// and runs unlocked here.
Status LapackLinalgProvider::run(const LinalgProblem& problem, const LinalgKernelPlan& plan,
                                 const LinalgBuffers& buffers, std::span<std::byte> workspace) const {
  static std::mutex serial_openblas;
  std::unique_lock<std::mutex> lock(serial_openblas, std::defer_lock);
  if (identity_.openblas_parallel == 0) lock.lock();
  return internal::lapack_run(module_->symbols, name_, problem, plan, buffers, workspace);
}

}  // namespace tenferro::linalg
