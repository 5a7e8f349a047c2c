// The ISA cap (Note [ISA cap]): parsing, resolution against the CPU, the
// environment variable, and that the native GEMM provider runs the capped
// kernels or reports a typed error.
#include "tenferro/cpu/cpu_isa.h"

#include <gtest/gtest.h>

#include <string>

#include "cpu/cpu_isa_test_support.h"
#include "tenferro/cpu/gemm/native_gemm.h"

namespace tenferro::cpu::testing {
namespace {

TEST(CpuIsaTest, ParsesEveryNameAndRejectsOthers) {
  for (CpuIsa isa : {CpuIsa::kAuto, CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kPortable}) {
    Result<CpuIsa> parsed = parse_cpu_isa(to_string(isa));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, isa);
  }
  Result<CpuIsa> bad = parse_cpu_isa("sse9");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.status().message()).find("found 'sse9'"), std::string::npos);
}

TEST(CpuIsaTest, AutoWithoutTheVariableIsTheBestTheCpuHas) {
  const ScopedCpuIsaEnv unset(nullptr);
  Result<CpuIsa> isa = resolve_cpu_isa(CpuIsa::kAuto);
  ASSERT_TRUE(isa.ok());
  EXPECT_EQ(*isa, best_cpu_isa());
  EXPECT_TRUE(cpu_supports(*isa));
}

TEST(CpuIsaTest, TheVariableCapsTheNativeGemm) {
  for (CpuIsa cap : {CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kPortable}) {
    const ScopedCpuIsaEnv env(std::string(to_string(cap)).c_str());
    Result<std::shared_ptr<NativeGemmProvider>> p = NativeGemmProvider::create();
    if (!cpu_supports(cap)) {
      ASSERT_FALSE(p.ok());
      EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(p.status().message()).find("TENFERRO_CPU_ISA"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ((*p)->isa(), cap);
    EXPECT_NE((*p)->capability().detail.find(std::string(to_string(cap))), std::string::npos);
  }
}

TEST(CpuIsaTest, AnExplicitOptionWinsOverTheVariable) {
  const ScopedCpuIsaEnv env("avx512");
  NativeGemmOptions o;
  o.isa = CpuIsa::kPortable;
  Result<std::shared_ptr<NativeGemmProvider>> p = NativeGemmProvider::create(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->isa(), CpuIsa::kPortable);
}

TEST(CpuIsaTest, AnUnknownValueIsATypedError) {
  const ScopedCpuIsaEnv env("avx1024");
  Result<std::shared_ptr<NativeGemmProvider>> p = NativeGemmProvider::create();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.status().stage(), ErrorStage::kConfiguration);
  const std::string message(p.status().message());
  EXPECT_NE(message.find("expected one of auto, avx512, avx2, portable"), std::string::npos) << message;
  EXPECT_NE(message.find("found 'avx1024'"), std::string::npos) << message;
}

TEST(CpuIsaTest, AnIsaTheCpuLacksSaysWhatWasExpectedAndFound) {
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2}) {
    if (cpu_supports(isa)) continue;
    Result<CpuIsa> r = resolve_cpu_isa(isa);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(r.status().message()).find("expected a CPU with"), std::string::npos);
  }
  EXPECT_TRUE(resolve_cpu_isa(CpuIsa::kPortable).ok());
}

}  // namespace
}  // namespace tenferro::cpu::testing
