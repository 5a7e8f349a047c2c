// The instruction sets of the CPU backend's runtime-dispatched kernels (the
// native GEMM micro-kernels, the register-tile transposes), and the cap a
// user puts on them without recompiling.
//
// Note [ISA cap]
// Kernels compiled for AVX-512 and AVX2 live in their own translation units
// and are chosen at run time from what the CPU supports (Note [ISA
// translation units] in src/cpu/gemm/native/micro_kernels.h). A cap --
// CpuEngineOptions::isa, NativeGemmOptions::isa, or the TENFERRO_CPU_ISA
// environment variable when those say kAuto -- selects a narrower set, to
// reproduce on an AVX-512 machine what an AVX2-only machine runs, or to rule
// out a kernel family when a result looks wrong. The environment is read
// when a provider or engine is created (a configuration input like its
// options), never on a hot path. The free layout kernels get the engine's
// cap from the ParallelContext they run with (ParallelContext::kernel_isa). The code outside the dispatched kernels is
// compiled for the TENFERRO_ARCH configure target (`tenferro info` prints
// both); an AVX2 emulation builds with -DTENFERRO_ARCH=x86-64-v3 and runs
// with TENFERRO_CPU_ISA=avx2.
#pragma once

#include <cstdint>
#include <string_view>

#include "tenferro/base/status.h"

namespace tenferro::cpu {

/// A kernel instruction set, or kAuto for "the best the CPU supports".
enum class CpuIsa : std::uint8_t {
  kAuto,      ///< the best the CPU supports (AVX-512, else AVX2, else portable)
  kAvx512,    ///< AVX-512 F/VL/DQ/BW + FMA kernels
  kAvx2,      ///< AVX2 + FMA kernels
  kPortable,  ///< plain C++ kernels (compiled for TENFERRO_ARCH), any CPU
};

/// The environment variable read when an option says kAuto.
inline constexpr std::string_view kCpuIsaEnv = "TENFERRO_CPU_ISA";

/// "auto", "avx512", "avx2" or "portable".
std::string_view to_string(CpuIsa isa) noexcept;

/// Parses a to_string() name; kInvalidArgument naming the accepted values
/// otherwise.
Result<CpuIsa> parse_cpu_isa(std::string_view text);

/// Whether this CPU runs `isa`'s kernels (always true for kAuto and
/// kPortable). Thread-safe.
bool cpu_supports(CpuIsa isa) noexcept;

/// The widest instruction set this CPU runs (never kAuto). Thread-safe.
CpuIsa best_cpu_isa() noexcept;

/// TENFERRO_CPU_ISA parsed (kAuto when unset or empty); kInvalidArgument for
/// an unknown value. Reads the environment on every call: call it when
/// creating an object, and keep the result.
Result<CpuIsa> cpu_isa_from_environment();

/// The instruction set to run for `requested`: kAuto becomes
/// TENFERRO_CPU_ISA if set, else best_cpu_isa(). kUnsupported when the CPU
/// lacks the requested (or environment-named) set; kInvalidArgument for an
/// unknown environment value. Never returns kAuto.
Result<CpuIsa> resolve_cpu_isa(CpuIsa requested);

/// The instruction set of the layout kernels' register-tile transposes
/// (copy_into, permutations) under a ParallelContext that names no cap
/// (kernel_isa() == kAuto: a kernel called directly, outside an engine):
/// resolve_cpu_isa(kAuto), or best_cpu_isa() when TENFERRO_CPU_ISA cannot
/// be honoured. Computed on first use and immutable after; a process that
/// changes TENFERRO_CPU_ISA later keeps the first value. An engine's
/// contexts carry its own resolved cap instead (ParallelContext::kernel_isa),
/// so CpuEngineOptions::isa reaches the layout kernels. Thread-safe.
CpuIsa layout_kernel_isa() noexcept;

}  // namespace tenferro::cpu
