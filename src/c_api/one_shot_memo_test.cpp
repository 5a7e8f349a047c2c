// OneShotMemo (Note [One-shot einsum memo]) on its own, and tf_einsum taking
// it: a repeated one-shot call allocates nothing (this program counts every
// operator new, Note [Counting operator new]), a new signature does, and a
// reused subscripts buffer with new text gets the new text's result.
#include "one_shot_memo.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tenferro/c/tenferro.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "testing/counting_new.h"

namespace tenferro::c_api {
namespace {

// Keeps the calling thread on one CPU (its current one) for the scope, so
// every acquire() finds the same table.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    sched_getaffinity(0, sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    pinned_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinnedToOneCpu() { sched_setaffinity(0, sizeof(saved_), &saved_); }
  bool pinned() const noexcept { return pinned_; }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

std::shared_ptr<einsum::CpuEinsumExecutor> make_executor() {
  return *einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(
      std::shared_ptr<const cpu::CpuGemmProvider>(*cpu::NativeGemmProvider::create())));
}

struct Prepared {
  std::shared_ptr<const einsum::EinsumOp> op;
  std::shared_ptr<const einsum::ExecutionPlan> plan;
};

Prepared prepare(einsum::CpuEinsumExecutor& executor, const char* subscripts, std::span<const IntArrayRef> shapes,
                 DType dtype = DType::kFloat64) {
  Prepared p;
  p.op = *einsum::EinsumOp::create(subscripts);
  p.plan = *executor.prepare(*p.op, shapes, dtype);
  return p;
}

TEST(OneShotMemoTest, FindsWhatWasRememberedForTheWholeSignatureOnly) {
  PinnedToOneCpu pin;
  ASSERT_TRUE(pin.pinned());
  auto executor = make_executor();
  const Dims a{2, 3}, b{3, 4}, b5{3, 5};
  const IntArrayRef shapes[] = {IntArrayRef(a), IntArrayRef(b)};
  const IntArrayRef other_shapes[] = {IntArrayRef(a), IntArrayRef(b5)};
  const IntArrayRef one_shape[] = {IntArrayRef(a)};
  const Prepared p = prepare(*executor, "ij,jk->ik", shapes);

  OneShotMemo memo;
  const OneShotMemo::Key key{"ij,jk->ik", 0, DType::kFloat64, shapes};
  {
    OneShotMemo::Lease lease = memo.acquire();
    ASSERT_FALSE(lease.busy());
    EXPECT_EQ(lease.find(key), nullptr);
    lease.remember(key, p.plan);
    EXPECT_EQ(lease.find(key), p.plan.get());
    // Any part of the signature that differs misses.
    EXPECT_EQ(lease.find({"ij,jk->ki", 0, DType::kFloat64, shapes}), nullptr);
    EXPECT_EQ(lease.find({"ij,jk", 0, DType::kFloat64, shapes}), nullptr);
    EXPECT_EQ(lease.find({"ij,jk->ik", 1, DType::kFloat64, shapes}), nullptr);
    EXPECT_EQ(lease.find({"ij,jk->ik", 0, DType::kFloat32, shapes}), nullptr);
    EXPECT_EQ(lease.find({"ij,jk->ik", 0, DType::kFloat64, other_shapes}), nullptr);
    EXPECT_EQ(lease.find({"ij,jk->ik", 0, DType::kFloat64, one_shape}), nullptr);
  }
  // The table went back to its slot with the entry.
  OneShotMemo::Lease again = memo.acquire();
  EXPECT_EQ(again.find(key), p.plan.get());
  EXPECT_EQ(memo.tables(), 1u);
}

TEST(OneShotMemoTest, KeepsTheLastEntriesAndNoPlanAboveItsBound) {
  PinnedToOneCpu pin;
  ASSERT_TRUE(pin.pinned());
  auto executor = make_executor();
  std::vector<Dims> dims;
  for (std::size_t i = 0; i <= OneShotMemo::kEntries; ++i) dims.push_back(Dims{2, static_cast<std::int64_t>(i + 1)});
  std::vector<Prepared> prepared;
  for (const Dims& d : dims) {
    const IntArrayRef s[] = {IntArrayRef(d)};
    prepared.push_back(prepare(*executor, "ij->ji", s));
  }
  OneShotMemo memo;
  OneShotMemo::Lease lease = memo.acquire();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const IntArrayRef s[] = {IntArrayRef(dims[i])};
    lease.remember({"ij->ji", 0, DType::kFloat64, s}, prepared[i].plan);
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const IntArrayRef s[] = {IntArrayRef(dims[i])};
    // kEntries + 1 remembered: the first was replaced.
    EXPECT_EQ(lease.find({"ij->ji", 0, DType::kFloat64, s}), i == 0 ? nullptr : prepared[i].plan.get()) << i;
  }

  OneShotMemo small(prepared[1].plan->retained_bytes() - 1);
  OneShotMemo::Lease refused = small.acquire();
  const IntArrayRef s[] = {IntArrayRef(dims[1])};
  refused.remember({"ij->ji", 0, DType::kFloat64, s}, prepared[1].plan);
  EXPECT_EQ(refused.find({"ij->ji", 0, DType::kFloat64, s}), nullptr);
}

TEST(OneShotMemoTest, ATableLeasedByAnotherCallIsBusy) {
  PinnedToOneCpu pin;
  ASSERT_TRUE(pin.pinned());
  OneShotMemo memo;
  {
    OneShotMemo::Lease first = memo.acquire();
    OneShotMemo::Lease second = memo.acquire();  // the same CPU's table
    EXPECT_FALSE(first.busy());
    EXPECT_TRUE(second.busy());
    EXPECT_EQ(second.find({"ij->ji", 0, DType::kFloat64, {}}), nullptr);
  }
  EXPECT_FALSE(memo.acquire().busy());
  EXPECT_EQ(memo.tables(), 1u);
}

TEST(OneShotMemoTest, ThreadsOnEveryCpuShareNoTableAtOnce) {
  // Leases from many threads: a table is never leased twice at once (each
  // thread writes its mark into the table's only entry it finds and checks
  // it after yielding).
  OneShotMemo memo;
  auto executor = make_executor();
  const Dims d{2, 2};
  const IntArrayRef s[] = {IntArrayRef(d)};
  const Prepared p = prepare(*executor, "ij->ji", s);
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string text = "ij->ji" + std::string(static_cast<std::size_t>(t), ' ');
      for (int i = 0; i < 2000; ++i) {
        OneShotMemo::Lease lease = memo.acquire();
        if (lease.busy()) continue;
        const OneShotMemo::Key key{text, t, DType::kFloat64, s};
        for (std::size_t k = 0; k < OneShotMemo::kEntries; ++k) lease.remember(key, p.plan);
        std::this_thread::yield();
        for (int other = 0; other < 8; ++other) {
          if (other == t) continue;
          const std::string other_text = "ij->ji" + std::string(static_cast<std::size_t>(other), ' ');
          if (lease.find({other_text, other, DType::kFloat64, s}) != nullptr) overlaps.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
}

// --- tf_einsum takes the memo ---

// A runtime on a thread pinned to one CPU (every call leases the same
// table), in a program whose operator new counts.
class CApiOneShot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!::tenferro::testing::kCountsAllocations)
      GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
    ASSERT_TRUE(pin_.pinned());
    ASSERT_EQ(tf_runtime_create(nullptr, &rt, nullptr), TF_CODE_OK);
  }
  void TearDown() override { tf_runtime_destroy(rt); }

  tf_runtime* rt = nullptr;

 private:
  PinnedToOneCpu pin_;
};

TEST_F(CApiOneShot, ARepeatedCallAllocatesNothingAndANewSignatureIsPlanned) {
  double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {};
  const std::int64_t shape[2] = {2, 2};
  tf_tensor ta{sizeof(tf_tensor), a, shape, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tb{sizeof(tf_tensor), b, shape, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tc{sizeof(tf_tensor), c, shape, nullptr, 2, TF_DTYPE_F64};
  const tf_tensor* ins[2] = {&ta, &tb};
  char subscripts[16] = "ij,jk->ik";  // a buffer the caller reuses
  const tf_einsum_args args{sizeof(tf_einsum_args), rt, subscripts, ins, 2, &tc, TF_PLANNER_AUTO, 0};

  std::uint64_t before = ::tenferro::testing::allocation_count();
  ASSERT_EQ(tf_einsum(&args, nullptr), TF_CODE_OK);
  EXPECT_GT(::tenferro::testing::allocation_count() - before, 0u);  // parsed, planned, remembered
  EXPECT_EQ(c[0], 19);
  EXPECT_EQ(c[3], 50);

  before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(tf_einsum(&args, nullptr), TF_CODE_OK);
  EXPECT_EQ(::tenferro::testing::allocation_count() - before, 0u);
  EXPECT_EQ(c[1], 22);

  // New text in the same buffer: its own result, not the remembered one.
  std::strcpy(subscripts, "ij,kj->ik");
  before = ::tenferro::testing::allocation_count();
  ASSERT_EQ(tf_einsum(&args, nullptr), TF_CODE_OK);
  EXPECT_GT(::tenferro::testing::allocation_count() - before, 0u);
  EXPECT_EQ(c[0], 1 * 5 + 2 * 6);
  EXPECT_EQ(c[1], 1 * 7 + 2 * 8);

  // The first text again is still remembered; a bad output shape is still
  // refused on a remembered signature.
  std::strcpy(subscripts, "ij,jk->ik");
  before = ::tenferro::testing::allocation_count();
  ASSERT_EQ(tf_einsum(&args, nullptr), TF_CODE_OK);
  EXPECT_EQ(::tenferro::testing::allocation_count() - before, 0u);
  EXPECT_EQ(c[1], 22);
  const std::int64_t wrong[2] = {2, 1};
  tf_tensor bad{sizeof(tf_tensor), c, wrong, nullptr, 2, TF_DTYPE_F64};
  const tf_einsum_args bad_args{sizeof(tf_einsum_args), rt, subscripts, ins, 2, &bad, TF_PLANNER_AUTO, 0};
  tf_error* error = nullptr;
  EXPECT_EQ(tf_einsum(&bad_args, &error), TF_CODE_SHAPE_MISMATCH);
  tf_error_destroy(error);
}

// tf_linalg and tf_fft run through the leased CPU's eager context (Note
// [One-shot einsum memo]); a call made a new context before, which
// resolved the engine and asked the provider again. A repeated call now
// allocates only its results, the borrowed operands' handles and its op.
TEST_F(CApiOneShot, RepeatedLinalgAndFftCallsReuseTheirContext) {
  double a[4] = {4, 1, 2, 3}, d = 0;
  const std::int64_t s2[2] = {2, 2};
  tf_tensor ta{sizeof(tf_tensor), a, s2, nullptr, 2, TF_DTYPE_F64};
  tf_tensor td{sizeof(tf_tensor), &d, nullptr, nullptr, 0, TF_DTYPE_F64};
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* out[1] = {&td};
  const tf_linalg_args det{sizeof(tf_linalg_args), rt, TF_LINALG_DET, 0, 0, 0, 0, 0, in, 1, out, 1};
  double x[16], y[18];
  for (int i = 0; i < 16; ++i) x[i] = i;
  const std::int64_t s16[1] = {16}, s9[1] = {9};
  tf_tensor tx{sizeof(tf_tensor), x, s16, nullptr, 1, TF_DTYPE_F64};
  tf_tensor ty{sizeof(tf_tensor), y, s9, nullptr, 1, TF_DTYPE_C128};
  const tf_fft_args rfft{sizeof(tf_fft_args), rt, TF_FFT_RFFT, TF_FFT_NORM_BACKWARD, nullptr, 0, nullptr, &tx, &ty};
  ASSERT_EQ(tf_linalg(&det, nullptr), TF_CODE_OK);
  const bool have_fft = tf_fft(&rfft, nullptr) == TF_CODE_OK;
  EXPECT_DOUBLE_EQ(d, 10);
  constexpr int kCalls = 200;
  std::uint64_t before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(tf_linalg(&det, nullptr), TF_CODE_OK);
  const std::uint64_t per_det = (::tenferro::testing::allocation_count() - before) / kCalls;
  std::uint64_t per_fft = 0;
  if (have_fft) {
    before = ::tenferro::testing::allocation_count();
    for (int i = 0; i < kCalls; ++i) ASSERT_EQ(tf_fft(&rfft, nullptr), TF_CODE_OK);
    per_fft = (::tenferro::testing::allocation_count() - before) / kCalls;
    EXPECT_DOUBLE_EQ(y[0], 120);  // the sum of 0..15
  }
  // det: the result and the borrowed operand's storage handle; rfft also
  // its FftOp. With a new context per call both made 6.
  EXPECT_LE(per_det, 2u);
  if (have_fft) {
    EXPECT_LE(per_fft, 4u);
  }
}

// tf_einsum_vjp remembers its prepared backward program (Note [One-shot
// einsum memo]): repeated calls give the same gradients, and allocate a
// small fixed number of objects (the borrowed operands' handles, the
// signature, the gradients) instead of building a program, its VJP and a
// fingerprint again. A reused subscripts buffer with new text and new
// active operands get their own program.
TEST_F(CApiOneShot, RepeatedGradientCallsRunTheRememberedBackwardProgram) {
  double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, g[4] = {1, 0, 0, 2}, ga[4] = {}, gb[4] = {};
  const std::int64_t s[2] = {2, 2};
  tf_tensor ta{sizeof(tf_tensor), a, s, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tb{sizeof(tf_tensor), b, s, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tg{sizeof(tf_tensor), g, s, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tga{sizeof(tf_tensor), ga, s, nullptr, 2, TF_DTYPE_F64};
  tf_tensor tgb{sizeof(tf_tensor), gb, s, nullptr, 2, TF_DTYPE_F64};
  const tf_tensor* ins[2] = {&ta, &tb};
  const tf_tensor* outs[2] = {&tga, &tgb};
  char subscripts[16] = "ij,jk->ik";
  const tf_einsum_vjp_args args{sizeof(tf_einsum_vjp_args), rt, subscripts, ins, 2, &tg, outs, TF_PLANNER_AUTO, 0};
  // C = A B: dA = G B^T, dB = A^T G.
  const double want_a[4] = {5, 7, 12, 16}, want_b[4] = {1, 6, 2, 8};
  const auto check = [&](const double* want_ga, const double* want_gb) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_DOUBLE_EQ(ga[i], want_ga[i]) << i;
      EXPECT_DOUBLE_EQ(gb[i], want_gb[i]) << i;
    }
  };
  std::uint64_t before = ::tenferro::testing::allocation_count();
  ASSERT_EQ(tf_einsum_vjp(&args, nullptr), TF_CODE_OK);
  const std::uint64_t first = ::tenferro::testing::allocation_count() - before;
  check(want_a, want_b);
  constexpr int kCalls = 200;
  before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(tf_einsum_vjp(&args, nullptr), TF_CODE_OK);
  const std::uint64_t repeated = (::tenferro::testing::allocation_count() - before) / kCalls;
  check(want_a, want_b);
  EXPECT_LT(repeated * 10, first) << "first call " << first << ", repeated " << repeated;

  // C = A B^T: dA = G B, dB = G^T A; only dB asked for.
  std::strcpy(subscripts, "ij,kj->ik");
  const tf_tensor* only_b[2] = {nullptr, &tgb};
  const tf_einsum_vjp_args b_only{sizeof(tf_einsum_vjp_args), rt, subscripts, ins, 2, &tg, only_b, TF_PLANNER_AUTO, 0};
  std::fill(gb, gb + 4, 0.0);
  ga[0] = -1;
  ASSERT_EQ(tf_einsum_vjp(&b_only, nullptr), TF_CODE_OK);
  ASSERT_EQ(tf_einsum_vjp(&b_only, nullptr), TF_CODE_OK);
  const double want_b2[4] = {1, 2, 6, 8};
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gb[i], want_b2[i]) << i;
  EXPECT_EQ(ga[0], -1);  // not asked for: untouched

  // A transposed operand has another layout class: its own prepared program.
  std::strcpy(subscripts, "ij,jk->ik");
  const std::int64_t col_major[2] = {1, 2};
  tf_tensor ta_t{sizeof(tf_tensor), a, s, col_major, 2, TF_DTYPE_F64};  // A^T
  const tf_tensor* ins_t[2] = {&ta_t, &tb};
  const tf_einsum_vjp_args transposed{
      sizeof(tf_einsum_vjp_args), rt, subscripts, ins_t, 2, &tg, outs, TF_PLANNER_AUTO, 0};
  ASSERT_EQ(tf_einsum_vjp(&transposed, nullptr), TF_CODE_OK);
  const double want_bt[4] = {1, 4, 3, 8};  // (A^T)^T G = A G
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gb[i], want_bt[i]) << i;
  ASSERT_EQ(tf_einsum_vjp(&args, nullptr), TF_CODE_OK);
  check(want_a, want_b);
}

}  // namespace
}  // namespace tenferro::c_api
