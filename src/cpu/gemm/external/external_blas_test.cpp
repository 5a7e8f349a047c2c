// External BLAS providers: the loaded build is identified from the library
// itself and classified as the capability table in external_blas.h says;
// OpenBLAS and BLIS work side by side in one process without leaking their
// symbols into the global scope (Note [External BLAS isolation]).
#include "tenferro/cpu/gemm/external_blas.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "cpu/gemm/gemm_test_support.h"

namespace tenferro::cpu::testing {
namespace {

bool openblas_already_loaded() {
  void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The identity must agree with itself: the file loaded, the library's own
// build string and openblas_get_parallel() tell the same story.
void expect_consistent_openblas_identity(const ExternalBlasGemmProvider& p) {
  const ExternalBlasIdentity& id = p.identity();
  EXPECT_EQ(id.library, "openblas");
  EXPECT_TRUE(contains(id.config, "OpenBLAS")) << id.config;
  EXPECT_FALSE(id.version.empty());
  const bool serial_file = contains(id.loaded_path, "openblas-serial");
  const bool single_threaded = contains(id.config, "SINGLE_THREADED");
  EXPECT_EQ(serial_file, single_threaded) << id.loaded_path << " vs " << id.config;
  EXPECT_EQ(id.threading == BlasThreading::kSerial, single_threaded);
  EXPECT_EQ(id.threading == BlasThreading::kOpenMP, contains(id.config, "USE_OPENMP"));
  if (id.threading == BlasThreading::kSerial) {
    EXPECT_EQ(p.capability().thread_count, ThreadCountControl::kSequential);
    EXPECT_EQ(p.capability().placement, PlacementControl::kCallingThread);
    EXPECT_TRUE(can_run_sequential_per_worker(p.capability()));
  } else {
    // Parallel OpenBLAS: process-global pool, never usable inside outer jobs.
    EXPECT_EQ(p.capability().thread_count, ThreadCountControl::kGlobalOrUncontrolled);
    EXPECT_EQ(p.capability().placement, PlacementControl::kExternalWorkers);
    EXPECT_FALSE(can_run_sequential_per_worker(p.capability()));
  }
  EXPECT_EQ(p.support().strides, GemmStrideSupport::kUnitStride);
}

TEST(ExternalBlasTest, SerialOpenBlasIsPinnedAndIdentified) {
  const bool preloaded = openblas_already_loaded();
  auto p = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kSerial});
  if (!p.ok()) GTEST_SKIP() << p.status().to_string();
  expect_consistent_openblas_identity(**p);
  if (!preloaded) {
    // Nothing else held libopenblas.so.0: the module's RUNPATH decided.
    EXPECT_TRUE(contains((*p)->identity().loaded_path, "openblas-serial")) << (*p)->identity().loaded_path;
    EXPECT_EQ((*p)->identity().threading, BlasThreading::kSerial);
  }
}

TEST(ExternalBlasTest, PthreadOpenBlasIsPinnedAndIdentified) {
  const bool preloaded = openblas_already_loaded();
  auto p = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kPthread});
  if (!p.ok()) GTEST_SKIP() << p.status().to_string();
  expect_consistent_openblas_identity(**p);
  if (!preloaded) {
    EXPECT_TRUE(contains((*p)->identity().loaded_path, "openblas-pthread")) << (*p)->identity().loaded_path;
    EXPECT_EQ((*p)->identity().threading, BlasThreading::kPthread);
  }
}

TEST(ExternalBlasTest, BlisUsesPerCallThreadsAndAvx512Kernels) {
  auto p = ExternalBlasGemmProvider::load_blis();
  if (!p.ok()) GTEST_SKIP() << p.status().to_string();
  const ExternalBlasIdentity& id = (*p)->identity();
  EXPECT_EQ(id.library, "blis");
  EXPECT_TRUE(contains(id.loaded_path, "libblis")) << id.loaded_path;
  EXPECT_TRUE(id.per_call_threads);
  EXPECT_EQ((*p)->capability().thread_count, ThreadCountControl::kPerCall);
  EXPECT_EQ((*p)->capability().placement, PlacementControl::kExternalWorkers);
  EXPECT_EQ((*p)->support().strides, GemmStrideSupport::kPositiveTilted);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(id.arch, "skx") << "BLIS should run its AVX-512 kernels on this CPU";
  }
}

TEST(ExternalBlasTest, OpenBlasAndBlisWorkInOneProcessWithoutGlobalSymbols) {
  const bool cblas_global_before = dlsym(RTLD_DEFAULT, "cblas_dgemm") != nullptr;
  const bool bli_global_before = dlsym(RTLD_DEFAULT, "bli_dgemm_ex") != nullptr;
  auto openblas = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kSerial});
  auto blis = ExternalBlasGemmProvider::load_blis();
  if (!openblas.ok() || !blis.ok()) GTEST_SKIP() << "both libraries are needed for this test";
  // RTLD_LOCAL: neither library's symbols became visible to the process.
  if (!cblas_global_before) {
    EXPECT_EQ(dlsym(RTLD_DEFAULT, "cblas_dgemm"), nullptr);
  }
  if (!bli_global_before) {
    EXPECT_EQ(dlsym(RTLD_DEFAULT, "bli_dgemm_ex"), nullptr);
  }
  EXPECT_NE((*openblas)->identity().loaded_path, (*blis)->identity().loaded_path);

  const std::int64_t m = 37, n = 29, k = 41;
  StridedMatrix<double> a(m, k, MatLayout::kColMajor, 1), b(k, n, MatLayout::kRowMajor, 2);
  StridedMatrix<double> c1(m, n, MatLayout::kColMajor, 3), c2(m, n, MatLayout::kColMajor, 3);
  std::vector<std::complex<double>> ref;
  std::vector<double> bound;
  reference_gemm(a, b, 1.0, 0.0, c1, ref, bound);
  const auto before = c1.buffer;
  SequentialContext seq;
  ASSERT_TRUE((*openblas)->gemm(GemmRequest{DType::kFloat64, {m, n, k, a.input(), b.input(), c1.output()}}, seq).ok());
  ASSERT_TRUE((*blis)->gemm(GemmRequest{DType::kFloat64, {m, n, k, a.input(), b.input(), c2.output()}}, seq).ok());
  EXPECT_TRUE(matches_reference(c1, ref, bound, k, before));
  EXPECT_TRUE(matches_reference(c2, ref, bound, k, before));
}

TEST(ExternalBlasTest, MissingModuleIsUnsupported) {
  OpenBlasOptions o;
  o.module_dir = "/nonexistent/tenferro";
  auto p = ExternalBlasGemmProvider::load_openblas(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(std::string(p.status().message()), "/nonexistent/tenferro")) << p.status().to_string();
}

}  // namespace
}  // namespace tenferro::cpu::testing
