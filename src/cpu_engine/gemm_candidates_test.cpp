// The CPU engine's GEMM candidate list (Note [GEMM candidates]): parsing,
// order, falling through an unavailable candidate with its refusal recorded
// and shown by explain(), every candidate refusing, and unknown names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu_engine/engine.h"

namespace tenferro::cpu {
namespace {

constexpr const char* kMissingDir = "/nonexistent/tenferro/modules";

TEST(GemmCandidates, ParseKeepsTheOrderAndRejectsUnknownNames) {
  Result<std::vector<std::string>> two = parse_gemm_candidates("openblas, native");
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_EQ(*two, (std::vector<std::string>{"openblas", "native"}));
  Result<std::vector<std::string>> one = parse_gemm_candidates("blis");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::string>{"blis"});

  for (const char* bad : {"native,mkl", "", "native,", "native,native"}) {
    Result<std::vector<std::string>> r = parse_gemm_candidates(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  const std::string message(parse_gemm_candidates("native,mkl").status().message());
  EXPECT_NE(message.find("'mkl'"), std::string::npos) << message;
  EXPECT_NE(message.find("native, openblas, blis"), std::string::npos) << message;
}

TEST(GemmCandidates, UnavailableFirstCandidateFallsThroughAndItsRefusalIsShown) {
  CpuEngineOptions options;
  options.gemm = {"openblas", "native"};
  options.openblas.module_dir = kMissingDir;
  Result<CpuEngine> engine = make_cpu_engine(options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ(engine->gemm_candidate, "native");
  EXPECT_EQ(engine->gemm->name(), "native");
  const CpuEngineProviderInfo& gemm = engine->providers.back();
  EXPECT_EQ(gemm.name, "gemm.native");
  ASSERT_EQ(gemm.refusals.size(), 1u);
  EXPECT_EQ(gemm.refusals[0].candidate, "openblas");
  EXPECT_NE(gemm.refusals[0].reason.find(kMissingDir), std::string::npos) << gemm.refusals[0].reason;
  const std::string text = engine->explain();
  EXPECT_NE(text.find("gemm.native"), std::string::npos) << text;
  EXPECT_NE(text.find("candidate openblas refused"), std::string::npos) << text;
}

TEST(GemmCandidates, TheFirstAvailableCandidateWinsInListOrder) {
  CpuEngineOptions native_first;
  native_first.gemm = {"native", "openblas"};
  Result<CpuEngine> a = make_cpu_engine(native_first);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->gemm_candidate, "native");
  EXPECT_TRUE(a->providers.back().refusals.empty());

  if (!ExternalBlasGemmProvider::load_openblas({}).ok()) GTEST_SKIP() << "OpenBLAS is not installed";
  CpuEngineOptions openblas_first;
  openblas_first.gemm = {"openblas", "native"};
  Result<CpuEngine> b = make_cpu_engine(openblas_first);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->gemm_candidate, "openblas");
  EXPECT_NE(std::string(b->gemm->name()).find("openblas"), std::string::npos) << b->gemm->name();
  EXPECT_TRUE(b->providers.back().refusals.empty());
}

TEST(GemmCandidates, EveryCandidateRefusingIsUnsupportedListingEachRefusal) {
  CpuEngineOptions options;
  options.gemm = {"openblas", "blis"};
  options.openblas.module_dir = kMissingDir;
  options.blis.module_dir = kMissingDir;
  Result<CpuEngine> engine = make_cpu_engine(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), ErrorCode::kUnsupported);
  const std::string message(engine.status().message());
  EXPECT_NE(message.find("openblas: "), std::string::npos) << message;
  EXPECT_NE(message.find("blis: "), std::string::npos) << message;
  EXPECT_LT(message.find("openblas: "), message.find("blis: ")) << message;
}

TEST(GemmCandidates, UnknownOrMissingNamesAreInvalidArgumentsNotRefusals) {
  // An unknown name is the caller's mistake: it stops selection even when a
  // later candidate would be available.
  CpuEngineOptions unknown;
  unknown.gemm = {"mkl", "native"};
  Result<CpuEngine> a = make_cpu_engine(unknown);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("'mkl'"), std::string_view::npos) << a.status().message();

  CpuEngineOptions empty;
  empty.gemm.clear();
  Result<CpuEngine> b = make_cpu_engine(empty);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::cpu
