// The native FFT provider (Note [Native FFT algorithm] in native_provider.h).
#include "tenferro/fft_cpu/native_provider.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "fft_cpu/plan_cache.h"

namespace tenferro::fft {

namespace {

// exp(i·2π·num/den), accurate for large num/den (reduced first).
std::complex<double> unit_root(std::int64_t num, std::int64_t den) {
  num %= den;
  if (num < 0) num += den;
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(num) / static_cast<double>(den);
  return {std::cos(angle), std::sin(angle)};
}

// Complex DFT of one length, both signs (Note [Native FFT algorithm]).
template <class R>
class ComplexPlan {
 public:
  using C = std::complex<R>;

  explicit ComplexPlan(std::int64_t n) : n_(n) {
    std::int64_t rest = n;
    SmallVector<std::int64_t, 16> factors;
    while (rest % 4 == 0) {
      factors.push_back(4);
      rest /= 4;
    }
    if (rest % 2 == 0) {
      factors.push_back(2);
      rest /= 2;
    }
    for (std::int64_t p = 3; p * p <= rest; p += 2) {
      while (rest % p == 0) {
        factors.push_back(p);
        rest /= p;
      }
    }
    if (rest > 1) factors.push_back(rest);
    const bool direct =
        std::all_of(factors.begin(), factors.end(), [](std::int64_t p) { return p <= kMaxDirectRadix; });
    if (!direct) {
      make_bluestein();
      return;
    }
    std::int64_t ns = 1;
    for (std::int64_t p : factors) {
      Stage s{p, ns, static_cast<std::int64_t>(twiddles_.size()), static_cast<std::int64_t>(roots_.size())};
      for (std::int64_t k = 0; k < ns; ++k)
        for (std::int64_t r = 1; r < p; ++r) twiddles_.push_back(to_c(unit_root(-r * k, ns * p)));
      for (std::int64_t t = 0; t < p; ++t) roots_.push_back(to_c(unit_root(-t, p)));
      stages_.push_back(s);
      ns *= p;
    }
  }

  /// Bytes of the tables (twiddles, roots, Bluestein's chirp, spectra and
  /// sub-plan).
  std::size_t table_bytes() const noexcept {
    std::size_t bytes =
        sizeof(*this) + stages_.size() * sizeof(Stage) +
        (twiddles_.size() + roots_.size() + chirp_.size() + bhat_forward_.size() + bhat_backward_.size()) * sizeof(C);
    return sub_ != nullptr ? bytes + sub_->table_bytes() : bytes;
  }

  /// Complex elements of scratch transform() needs.
  std::int64_t scratch_elements() const noexcept { return bluestein_ ? 2 * m_ + sub_->scratch_elements() : n_; }

  /// data[0..n) := DFT(data) with exp(sign·2πi jk/n); `scratch` as above.
  void transform(C* data, C* scratch, int sign) const noexcept {
    if (bluestein_) {
      run_bluestein(data, scratch, sign);
      return;
    }
    C* x = data;
    C* y = scratch;
    for (const Stage& s : stages_) {
      run_stage(s, x, y, sign);
      std::swap(x, y);
    }
    if (x != data) std::copy(x, x + n_, data);
  }

 private:
  struct Stage {
    std::int64_t p, ns, twiddle, root;
  };

  static C to_c(std::complex<double> z) { return C(static_cast<R>(z.real()), static_cast<R>(z.imag())); }
  static C maybe_conj(C z, bool c) { return c ? std::conj(z) : z; }

  // One Stockham pass of radix p: x -> y (Note [Native FFT algorithm]).
  void run_stage(const Stage& s, const C* x, C* y, int sign) const noexcept {
    const std::int64_t p = s.p, ns = s.ns, stride = n_ / p;
    const bool backward = sign > 0;
    const C* tw = twiddles_.data() + s.twiddle;
    const C* roots = roots_.data() + s.root;
    C v[kMaxDirectRadix];
    C out[kMaxDirectRadix];
    for (std::int64_t j = 0; j < stride; ++j) {
      const std::int64_t k = j % ns;
      v[0] = x[j];
      for (std::int64_t r = 1; r < p; ++r) v[r] = x[j + r * stride] * maybe_conj(tw[k * (p - 1) + r - 1], backward);
      const std::int64_t base = (j / ns) * ns * p + k;
      switch (p) {
        case 2:
          y[base] = v[0] + v[1];
          y[base + ns] = v[0] - v[1];
          break;
        case 3: {
          const C t1 = v[1] + v[2];
          const C t2 = v[0] - R(0.5) * t1;
          const R s3 = static_cast<R>(backward ? 0.86602540378443864676 : -0.86602540378443864676);
          const C d = v[1] - v[2];
          const C t3(-s3 * d.imag(), s3 * d.real());  // i·s3·(v1 - v2)
          y[base] = v[0] + t1;
          y[base + ns] = t2 + t3;
          y[base + 2 * ns] = t2 - t3;
          break;
        }
        case 4: {
          const C a = v[0] + v[2], b = v[0] - v[2], c = v[1] + v[3], d = v[1] - v[3];
          const C wd = backward ? C(-d.imag(), d.real()) : C(d.imag(), -d.real());  // ±i·d
          y[base] = a + c;
          y[base + ns] = b + wd;
          y[base + 2 * ns] = a - c;
          y[base + 3 * ns] = b - wd;
          break;
        }
        default:
          for (std::int64_t q = 0; q < p; ++q) {
            C acc = v[0];
            std::int64_t t = 0;
            for (std::int64_t r = 1; r < p; ++r) {
              t += q;
              if (t >= p) t -= p;
              acc += v[r] * maybe_conj(roots[t], backward);
            }
            out[q] = acc;
          }
          for (std::int64_t q = 0; q < p; ++q) y[base + q * ns] = out[q];
          break;
      }
    }
  }

  void make_bluestein() {
    bluestein_ = true;
    m_ = 1;
    while (m_ < 2 * n_ - 1) m_ *= 2;
    sub_ = std::make_unique<ComplexPlan>(m_);
    // chirp[k] = exp(-πi k²/n) (forward sign; conj for backward), k² mod 2n.
    chirp_.resize(static_cast<std::size_t>(n_));
    std::int64_t k2 = 0;  // k² mod 2n, updated without overflow: (k+1)² = k² + 2k + 1
    for (std::int64_t k = 0; k < n_; ++k) {
      chirp_[static_cast<std::size_t>(k)] = to_c(unit_root(-k2, 2 * n_));
      k2 = (k2 + 2 * k + 1) % (2 * n_);
    }
    // The spectra of b[t] = conj(chirp[|t|]) (circular), scaled by 1/m, for
    // both signs.
    for (int which = 0; which < 2; ++which) {
      std::vector<C> b(static_cast<std::size_t>(m_), C(0));
      std::vector<C> scratch(static_cast<std::size_t>(sub_->scratch_elements()));
      for (std::int64_t t = 0; t < n_; ++t) {
        const C c = which == 0 ? std::conj(chirp_[static_cast<std::size_t>(t)]) : chirp_[static_cast<std::size_t>(t)];
        b[static_cast<std::size_t>(t)] = c;
        if (t > 0) b[static_cast<std::size_t>(m_ - t)] = c;
      }
      sub_->transform(b.data(), scratch.data(), -1);
      for (C& z : b) z /= static_cast<R>(m_);
      (which == 0 ? bhat_forward_ : bhat_backward_) = std::move(b);
    }
  }

  void run_bluestein(C* data, C* scratch, int sign) const noexcept {
    const bool backward = sign > 0;
    C* a = scratch;
    C* sub_scratch = scratch + m_;
    for (std::int64_t j = 0; j < n_; ++j) a[j] = data[j] * maybe_conj(chirp_[static_cast<std::size_t>(j)], backward);
    std::fill(a + n_, a + m_, C(0));
    sub_->transform(a, sub_scratch, -1);
    const std::vector<C>& bhat = backward ? bhat_backward_ : bhat_forward_;
    for (std::int64_t j = 0; j < m_; ++j) a[j] *= bhat[static_cast<std::size_t>(j)];
    sub_->transform(a, sub_scratch, +1);
    for (std::int64_t k = 0; k < n_; ++k) data[k] = a[k] * maybe_conj(chirp_[static_cast<std::size_t>(k)], backward);
  }

  std::int64_t n_;
  std::vector<Stage> stages_;
  std::vector<C> twiddles_;  // forward sign; conjugated for backward
  std::vector<C> roots_;
  bool bluestein_ = false;
  std::int64_t m_ = 0;
  std::unique_ptr<ComplexPlan> sub_;
  std::vector<C> chirp_;
  std::vector<C> bhat_forward_, bhat_backward_;
};

template <class R>
class NativeKernel final : public FftKernel {
 public:
  using C = std::complex<R>;

  explicit NativeKernel(const FftProblem& p) : problem_(p), plan_(p.dim.n) {}

  std::size_t workspace_bytes() const noexcept override {
    return static_cast<std::size_t>(problem_.dim.n + plan_.scratch_elements()) * sizeof(C);
  }
  std::size_t table_bytes() const noexcept override { return plan_.table_bytes(); }

  Status execute(void* in, void* out, std::span<std::byte> workspace) const noexcept override {
    const FftProblem& p = problem_;
    const std::int64_t n = p.dim.n, half = n / 2 + 1;
    C* x = reinterpret_cast<C*>(workspace.data());
    C* scratch = x + n;
    const std::size_t loops = p.batch.size();
    SmallVector<std::int64_t, 4> index(loops, 0);
    std::int64_t in_off = 0, out_off = 0;
    const std::int64_t count = p.howmany();
    for (std::int64_t b = 0; b < count; ++b) {
      switch (p.transform) {
        case FftTransform::kC2C: {
          const C* src = static_cast<const C*>(in) + in_off;
          for (std::int64_t j = 0; j < n; ++j) x[j] = src[j * p.dim.in_stride];
          plan_.transform(x, scratch, p.sign);
          C* dst = static_cast<C*>(out) + out_off;
          for (std::int64_t j = 0; j < n; ++j) dst[j * p.dim.out_stride] = x[j];
          break;
        }
        case FftTransform::kR2C: {
          const R* src = static_cast<const R*>(in) + in_off;
          for (std::int64_t j = 0; j < n; ++j) x[j] = C(src[j * p.dim.in_stride], R(0));
          plan_.transform(x, scratch, -1);
          C* dst = static_cast<C*>(out) + out_off;
          for (std::int64_t j = 0; j < half; ++j) dst[j * p.dim.out_stride] = x[j];
          break;
        }
        case FftTransform::kC2R: {
          const C* src = static_cast<const C*>(in) + in_off;
          for (std::int64_t j = 0; j < half; ++j) x[j] = src[j * p.dim.in_stride];
          for (std::int64_t j = half; j < n; ++j) x[j] = std::conj(x[n - j]);
          plan_.transform(x, scratch, +1);
          R* dst = static_cast<R*>(out) + out_off;
          for (std::int64_t j = 0; j < n; ++j) dst[j * p.dim.out_stride] = x[j].real();
          break;
        }
      }
      // Next batch index (last loop fastest).
      for (std::size_t l = loops; l-- > 0;) {
        in_off += p.batch[l].in_stride;
        out_off += p.batch[l].out_stride;
        if (++index[l] < p.batch[l].n) break;
        in_off -= p.batch[l].in_stride * p.batch[l].n;
        out_off -= p.batch[l].out_stride * p.batch[l].n;
        index[l] = 0;
      }
    }
    return ok_status();
  }

 private:
  FftProblem problem_;
  ComplexPlan<R> plan_;
};

}  // namespace

NativeFftProvider::NativeFftProvider(std::size_t max_cached_plans, std::size_t max_cached_bytes)
    : capability_{cpu::ThreadCountControl::kSequential, cpu::PlacementControl::kCallingThread,
                  "native Stockham/Bluestein kernels on the calling thread"},
      lock_(std::make_shared<std::mutex>()),
      cache_(std::make_unique<internal::FftPlanCache>(max_cached_plans, max_cached_bytes, lock_)) {}

NativeFftProvider::~NativeFftProvider() = default;

Result<std::shared_ptr<const FftKernel>> NativeFftProvider::plan(const FftProblem& problem) const {
  if (problem.precision != DType::kFloat32 && problem.precision != DType::kFloat64) {
    return unsupported_fft_problem(name(), problem, "expected precision float32 or float64");
  }
  if (problem.dim.n < 1) return unsupported_fft_problem(name(), problem, "expected a length >= 1");
  return cache_->get_or_create(problem, [&]() -> Result<std::shared_ptr<const FftKernel>> {
    if (problem.precision == DType::kFloat64)
      return std::shared_ptr<const FftKernel>(std::make_shared<NativeKernel<double>>(problem));
    return std::shared_ptr<const FftKernel>(std::make_shared<NativeKernel<float>>(problem));
  });
}

FftPlanCacheStats NativeFftProvider::cache_stats() const { return cache_->stats(); }

void NativeFftProvider::clear_cache() const { cache_->clear(); }

}  // namespace tenferro::fft
