// CPU feature checks and the kernel ISA cap (Note [ISA cap] in
// include/tenferro/cpu/cpu_isa.h).
#include "tenferro/cpu/cpu_isa.h"

#include <cstdlib>
#include <string>

namespace tenferro::cpu {

namespace {
constexpr std::string_view kCpuIsaNames = "auto, avx512, avx2, portable";
}  // namespace

std::string_view to_string(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::kAuto:
      return "auto";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kPortable:
      return "portable";
  }
  return "unknown";
}

Result<CpuIsa> parse_cpu_isa(std::string_view text) {
  for (CpuIsa isa : {CpuIsa::kAuto, CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kPortable}) {
    if (text == to_string(isa)) return isa;
  }
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "cpu isa: expected one of {}, found '{}'",
                    kCpuIsaNames, text);
}

bool cpu_supports(CpuIsa isa) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  switch (isa) {
    case CpuIsa::kAvx512:
      // The AVX-512 translation units are compiled with F, VL, DQ and BW.
      return fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    case CpuIsa::kAvx2:
      return fma && __builtin_cpu_supports("avx2");
    case CpuIsa::kAuto:
    case CpuIsa::kPortable:
      return true;
  }
  return false;
#else
  return isa == CpuIsa::kAuto || isa == CpuIsa::kPortable;
#endif
}

CpuIsa best_cpu_isa() noexcept {
  return cpu_supports(CpuIsa::kAvx512) ? CpuIsa::kAvx512
         : cpu_supports(CpuIsa::kAvx2) ? CpuIsa::kAvx2
                                       : CpuIsa::kPortable;
}

Result<CpuIsa> cpu_isa_from_environment() {
  const char* env = std::getenv(kCpuIsaEnv.data());  // a literal: NUL-terminated
  if (env == nullptr || *env == '\0') return CpuIsa::kAuto;
  Result<CpuIsa> isa = parse_cpu_isa(env);
  if (!isa.ok()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "{}: expected one of {}, found '{}'",
                      kCpuIsaEnv, kCpuIsaNames, env);
  }
  return isa;
}

Result<CpuIsa> resolve_cpu_isa(CpuIsa requested) {
  CpuIsa isa = requested;
  bool from_env = false;
  if (isa == CpuIsa::kAuto) {
    TENFERRO_ASSIGN_OR_RETURN(isa, cpu_isa_from_environment());
    from_env = isa != CpuIsa::kAuto;
  }
  if (isa == CpuIsa::kAuto) return best_cpu_isa();
  if (!cpu_supports(isa)) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "cpu isa{}: expected a CPU with {} support, found one without it (best available: {})",
                      from_env ? fmt::format(" ({})", kCpuIsaEnv) : std::string(), to_string(isa),
                      to_string(best_cpu_isa()));
  }
  return isa;
}

CpuIsa layout_kernel_isa() noexcept {
  static const CpuIsa isa = [] {  // immutable after initialisation
    Result<CpuIsa> resolved = resolve_cpu_isa(CpuIsa::kAuto);
    return resolved.ok() ? *resolved : best_cpu_isa();
  }();
  return isa;
}

}  // namespace tenferro::cpu
