// ExternalBlasGemmProvider: loads one BLAS module (Note [External BLAS
// isolation] in external_blas.h), identifies the library build actually
// loaded, classifies its capability and maps strided GEMM problems onto the
// library's call.
#include "tenferro/cpu/gemm/external_blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <complex>
#include <cstring>
#include <type_traits>

#include "cpu/gemm/external/blas_module_abi.h"
#include "cpu/gemm/gemm_layout.h"
#include "tenferro/base/assert.h"
#include "tenferro/base/build_info.h"

#ifndef TENFERRO_BLAS_MODULE_DIR
#define TENFERRO_BLAS_MODULE_DIR ""
#endif

namespace tenferro::cpu {
namespace internal {

/// An opened module; the library stays mapped (RTLD_NODELETE).
struct BlasModuleHandle {
  void* handle = nullptr;
  const TenferroBlasModule* module = nullptr;
  std::string path;
  ~BlasModuleHandle() {
    if (handle != nullptr) dlclose(handle);
  }
};

}  // namespace internal

namespace {

Result<std::unique_ptr<internal::BlasModuleHandle>> open_module(const std::string& dir, const std::string& file,
                                                                bool select_avx512) {
  // Note [Locating provider files].
  const std::string base =
      dir.empty() ? locate_provider_file(file, TENFERRO_BLAS_MODULE_DIR, ProviderFileKind::kModule) : dir;
  auto h = std::make_unique<internal::BlasModuleHandle>();
  h->path = base + "/" + file;
  h->handle = dlopen(h->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h->handle == nullptr) {
    const char* why = dlerror();
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "external BLAS: expected a loadable module at {}, found: {}{}", h->path,
                      why != nullptr ? why : "unknown dlopen error",
                      dir.empty() ? " (name the install prefix with TENFERRO_PREFIX, or the directory with the "
                                    "provider's module_dir option)"
                                  : "");
  }
  auto entry = reinterpret_cast<TenferroBlasModuleEntry>(dlsym(h->handle, TENFERRO_BLAS_MODULE_SYMBOL));
  h->module = entry != nullptr ? entry() : nullptr;
  if (h->module == nullptr || h->module->abi_version != TENFERRO_BLAS_MODULE_ABI_VERSION ||
      h->module->initialize == nullptr || h->module->identify == nullptr ||
      (h->module->gemm_colmajor == nullptr && h->module->gemm_strided == nullptr)) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "external BLAS: expected module ABI version {} in {}, found {}", TENFERRO_BLAS_MODULE_ABI_VERSION,
                      h->path,
                      h->module == nullptr ? std::string("no entry point") : std::to_string(h->module->abi_version));
  }
  if (h->module->initialize(select_avx512 ? 1 : 0) != 0) {
    return make_error(ErrorCode::kUnavailable, ErrorStage::kConfiguration,
                      "external BLAS: expected {} to initialise, found an initialisation failure", h->path);
  }
  return h;
}

int blas_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return TENFERRO_BLAS_F32;
    case DType::kFloat64:
      return TENFERRO_BLAS_F64;
    case DType::kComplex64:
      return TENFERRO_BLAS_C64;
    default:
      return TENFERRO_BLAS_C128;
  }
}

// alpha/beta in the request dtype, addressable by pointer.
struct ScalarStorage {
  alignas(16) unsigned char bytes[16];
  ScalarStorage(DType dtype, std::complex<double> v) {
    switch (dtype) {
      case DType::kFloat32: {
        const float x = static_cast<float>(v.real());
        std::memcpy(bytes, &x, sizeof(x));
        break;
      }
      case DType::kFloat64: {
        const double x = v.real();
        std::memcpy(bytes, &x, sizeof(x));
        break;
      }
      case DType::kComplex64: {
        const std::complex<float> x(static_cast<float>(v.real()), static_cast<float>(v.imag()));
        std::memcpy(bytes, &x, sizeof(x));
        break;
      }
      default:
        std::memcpy(bytes, &v, sizeof(v));
        break;
    }
  }
};

// C = beta * C (beta == 0 writes zeros), for k == 0 or alpha == 0, which the
// provider handles itself so the library never sees operands it cannot read.
void scale_output(DType dtype, const GemmProblem& p) {
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
      T beta;
      if constexpr (std::is_floating_point_v<T>) {
        beta = static_cast<T>(p.beta.real());
      } else {
        beta =
            T(static_cast<typename T::value_type>(p.beta.real()), static_cast<typename T::value_type>(p.beta.imag()));
      }
      T* c = static_cast<T*>(p.c.data);
      for (std::int64_t j = 0; j < p.n; ++j)
        for (std::int64_t i = 0; i < p.m; ++i) {
          T& x = c[i * p.c.row_stride + j * p.c.col_stride];
          x = beta == T(0) ? T(0) : beta * x;
        }
    }
  });
}

// BLIS rejects strides of extent-1 dimensions that do not fit its tilt
// rules; give them values it accepts (they are never used).
void normalize_unit_extent(std::int64_t rows, std::int64_t cols, std::int64_t& rs, std::int64_t& cs) {
  const std::int64_t r = rs, c = cs;
  if (rows <= 1 && cols <= 1) {
    rs = cs = 1;
  } else if (rows <= 1) {
    rs = c == 1 ? std::max<std::int64_t>(cols, 1) : 1;
  } else if (cols <= 1) {
    cs = r == 1 ? std::max<std::int64_t>(rows, 1) : 1;
  }
}

bool fits_int(std::int64_t v) { return v <= INT_MAX; }

}  // namespace

std::string_view to_string(OpenBlasBuild build) noexcept {
  switch (build) {
    case OpenBlasBuild::kSerial:
      return "serial";
    case OpenBlasBuild::kPthread:
      return "pthread";
    case OpenBlasBuild::kOpenMP:
      return "openmp";
  }
  return "unknown";
}

CpuIsa openblas_core_isa(std::string_view core) noexcept {
  const auto is = [core](std::string_view name) {
    return core.size() == name.size() && std::equal(core.begin(), core.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (is("skylakex") || is("cooperlake") || is("sapphirerapids")) return CpuIsa::kAvx512;
  if (is("haswell") || is("zen")) return CpuIsa::kAvx2;
  return CpuIsa::kPortable;
}

std::string_view openblas_core_for(CpuIsa widest, std::string_view core) noexcept {
  const CpuIsa runs = openblas_core_isa(core);
  if (widest == CpuIsa::kAvx512 && runs != CpuIsa::kAvx512) return "SkylakeX";
  if (widest == CpuIsa::kAvx2 && runs == CpuIsa::kPortable) return "Haswell";
  return {};
}

std::string_view to_string(BlasThreading threading) noexcept {
  switch (threading) {
    case BlasThreading::kSerial:
      return "serial";
    case BlasThreading::kPthread:
      return "pthread";
    case BlasThreading::kOpenMP:
      return "openmp";
  }
  return "unknown";
}

Result<std::shared_ptr<ExternalBlasGemmProvider>> ExternalBlasGemmProvider::load_openblas(
    const OpenBlasOptions& options) {
  const std::string file = "tenferro_blas_openblas_" + std::string(to_string(options.build)) + ".so";
  TENFERRO_ASSIGN_OR_RETURN(auto module, open_module(options.module_dir, file, /*select_avx512=*/false));
  return std::shared_ptr<ExternalBlasGemmProvider>(new ExternalBlasGemmProvider(std::move(module)));
}

Result<std::shared_ptr<ExternalBlasGemmProvider>> ExternalBlasGemmProvider::load_blis(const BlisOptions& options) {
  TENFERRO_ASSIGN_OR_RETURN(auto module,
                            open_module(options.module_dir, "tenferro_blas_blis.so", options.select_avx512_kernels));
  return std::shared_ptr<ExternalBlasGemmProvider>(new ExternalBlasGemmProvider(std::move(module)));
}

ExternalBlasGemmProvider::ExternalBlasGemmProvider(std::unique_ptr<internal::BlasModuleHandle> module)
    : module_(std::move(module)) {
  TenferroBlasIdentity raw;
  module_->module->identify(&raw);
  identity_.library = raw.library;
  identity_.version = raw.version;
  identity_.config = raw.config;
  identity_.arch = raw.arch;
  identity_.loaded_path = raw.loaded_path;
  identity_.module_path = module_->path;
  identity_.threading = raw.threading == TENFERRO_BLAS_OPENMP    ? BlasThreading::kOpenMP
                        : raw.threading == TENFERRO_BLAS_PTHREAD ? BlasThreading::kPthread
                                                                 : BlasThreading::kSerial;
  identity_.pool_threads = raw.pool_threads;
  identity_.per_call_threads = raw.per_call_threads != 0 && module_->module->gemm_strided != nullptr;

  // Classify from the build actually loaded (Note [External BLAS isolation]).
  if (identity_.threading == BlasThreading::kSerial) {
    capability_.thread_count = ThreadCountControl::kSequential;
    capability_.placement = PlacementControl::kCallingThread;
  } else if (identity_.per_call_threads) {
    capability_.thread_count = ThreadCountControl::kPerCall;
    capability_.placement = PlacementControl::kExternalWorkers;
  } else {
    capability_.thread_count = ThreadCountControl::kGlobalOrUncontrolled;
    capability_.placement = PlacementControl::kExternalWorkers;
  }
  capability_.detail =
      fmt::format("{} {} {} build, {} kernels, loaded from {} (via {})", identity_.library, identity_.version,
                  to_string(identity_.threading), identity_.arch, identity_.loaded_path, identity_.module_path);
  support_.f32 = support_.f64 = support_.c64 = support_.c128 = true;
  support_.strides =
      module_->module->gemm_strided != nullptr ? GemmStrideSupport::kPositiveTilted : GemmStrideSupport::kUnitStride;
}

ExternalBlasGemmProvider::~ExternalBlasGemmProvider() = default;

Status ExternalBlasGemmProvider::set_global_thread_count(int threads) const {
  if (threads < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "{}: expected a thread count of at least 1, found {}", identity_.library, threads);
  }
  if (module_->module->set_global_threads == nullptr) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "{}: expected a library with a global thread count, found none", identity_.library);
  }
  module_->module->set_global_threads(threads);
  return ok_status();
}

Status ExternalBlasGemmProvider::check(DType dtype, const GemmProblem& p) const {
  TENFERRO_TRY(check_dtype_supported(support_, dtype, identity_.library));
  TENFERRO_TRY(validate_gemm_problem(dtype, p, identity_.library));
  if (p.k == 0 || p.alpha == std::complex<double>(0)) {
    // Only C is touched (scale_output); its strides are validated above.
    return ok_status();
  }
  TENFERRO_TRY(check_layout_supported(support_, p, identity_.library));
  if (module_->module->gemm_strided == nullptr) {
    const std::int64_t extents[] = {
        p.m, p.n, p.k, p.a.row_stride, p.a.col_stride, p.b.row_stride, p.b.col_stride, p.c.row_stride, p.c.col_stride};
    for (std::int64_t v : extents) {
      if (!fits_int(v)) {
        return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                          "{}: expected extents and strides below 2^31 (32-bit BLAS integers), found {}",
                          identity_.library, v);
      }
    }
  }
  return ok_status();
}

void ExternalBlasGemmProvider::run(DType dtype, const GemmProblem& problem, int threads) const {
  GemmProblem p = problem;
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0 || p.alpha == std::complex<double>(0)) {
    scale_output(dtype, p);
    return;
  }
  const ScalarStorage alpha(dtype, p.alpha), beta(dtype, p.beta);
  const TenferroBlasModule& mod = *module_->module;
  if (mod.gemm_strided != nullptr) {
    normalize_unit_extent(p.m, p.k, p.a.row_stride, p.a.col_stride);
    normalize_unit_extent(p.k, p.n, p.b.row_stride, p.b.col_stride);
    normalize_unit_extent(p.m, p.n, p.c.row_stride, p.c.col_stride);
    mod.gemm_strided(blas_dtype(dtype), p.m, p.n, p.k, alpha.bytes, p.a.data, p.a.row_stride, p.a.col_stride, p.b.data,
                     p.b.row_stride, p.b.col_stride, beta.bytes, p.c.data, p.c.row_stride, p.c.col_stride, threads);
    return;
  }
  // Column-major call; a row-major C is computed as C^T = B^T A^T.
  if (!internal::fits_col_major(p.m, p.n, p.c.row_stride, p.c.col_stride)) {
    std::swap(p.m, p.n);
    std::swap(p.a, p.b);
    std::swap(p.a.row_stride, p.a.col_stride);
    std::swap(p.b.row_stride, p.b.col_stride);
    std::swap(p.c.row_stride, p.c.col_stride);
  }
  const auto c = internal::as_blas_operand(p.m, p.n, p.c.row_stride, p.c.col_stride);
  const auto a = internal::as_blas_operand(p.m, p.k, p.a.row_stride, p.a.col_stride);
  const auto b = internal::as_blas_operand(p.k, p.n, p.b.row_stride, p.b.col_stride);
  TENFERRO_CHECK(c && !c->transposed && a && b);  // guaranteed by check()
  mod.gemm_colmajor(blas_dtype(dtype), a->transposed ? 1 : 0, b->transposed ? 1 : 0, static_cast<int>(p.m),
                    static_cast<int>(p.n), static_cast<int>(p.k), alpha.bytes, p.a.data, static_cast<int>(a->ld),
                    p.b.data, static_cast<int>(b->ld), beta.bytes, p.c.data, static_cast<int>(c->ld));
}

Status ExternalBlasGemmProvider::gemm(const GemmRequest& request, const ParallelContext& ctx) const {
  TENFERRO_TRY(check(request.dtype, request.problem));
  run(request.dtype, request.problem, ctx.max_threads());
  return ok_status();
}

Status ExternalBlasGemmProvider::gemm_strided_batched(const StridedBatchedGemmRequest& request,
                                                      const ParallelContext& ctx) const {
  TENFERRO_TRY(validate_strided_batched(request, identity_.library));
  TENFERRO_TRY(check(request.dtype, request.problem));
  const std::int64_t elem = static_cast<std::int64_t>(dtype_size(request.dtype));
  const auto* a0 = static_cast<const char*>(request.problem.a.data);
  const auto* b0 = static_cast<const char*>(request.problem.b.data);
  auto* c0 = static_cast<char*>(request.problem.c.data);
  GemmProblem p = request.problem;
  for (std::int64_t i = 0; i < request.batch_count; ++i) {
    if (a0 != nullptr) p.a.data = a0 + i * request.a_batch_stride * elem;
    if (b0 != nullptr) p.b.data = b0 + i * request.b_batch_stride * elem;
    if (c0 != nullptr) p.c.data = c0 + i * request.c_batch_stride * elem;
    run(request.dtype, p, ctx.max_threads());
  }
  return ok_status();
}

Status ExternalBlasGemmProvider::gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const {
  for (const GemmProblem& p : request.problems) TENFERRO_TRY(check(request.dtype, p));
  for (const GemmProblem& p : request.problems) run(request.dtype, p, ctx.max_threads());
  return ok_status();
}

}  // namespace tenferro::cpu
