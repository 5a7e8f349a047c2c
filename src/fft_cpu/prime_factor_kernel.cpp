// The prime-factor kernel (Note [Medium prime factors]).
#include "fft_cpu/prime_factor_kernel.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <optional>
#include <vector>

namespace tenferro::fft::internal {

// Note [Medium prime factors]
// FFTW_ESTIMATE picks its plan by counting operations, and for a prime
// factor p from 37 to 89 of a composite length it counts Rader's algorithm
// (or Bluestein's) as cheaper than the direct O(p^2) transform
// (dft-generic): fftw_print_plan of n = 592 = 16 * 37 shows
// dft-rader-37 under ESTIMATE and dft-generic-37 under FFTW_MEASURE, of
// 848 = 16 * 53 dft-bluestein-53 against dft-generic-53. Rader's and
// Bluestein's solvers run one transform at a time and allocate a buffer in
// every execution (malloc/free were 5 % of the audit's profile of n = 999),
// so these lengths ran at 0.34-0.58 of numpy's and torch's speed
// (pocketfft does the p-point step directly). FFTW_MEASURE finds the
// direct plan but planned for 110-720 ms per length on the development VM
// (2026-12-07, loaded), against about 1 ms for ESTIMATE; FFTW has no
// flag that makes ESTIMATE prefer dft-generic (FFTW_NO_SLOW and
// FFTW_ESTIMATE_PATIENT still chose Rader), and its time limit is
// process-global state. So the FFTW provider (in estimate mode) runs such
// a length, n = p * m with p the largest prime factor, as one
// decimation-in-time Cooley-Tukey step:
//   1. the transform is copied into a contiguous complex array: c2c as it
//      is; a real transform of even n as the complex transform of n/2
//      points z[j] = x[2j] + i x[2j+1] (r2c), or the spectrum of that z
//      (c2r: Z[k] = X[k] + conj X[n/2-k] + i (X[k] - conj X[n/2-k]) e^(2 pi
//      i k/n), the imaginary parts of X[0] and X[n/2] dropped as FFTW and
//      numpy do); two real transforms of odd n as one complex transform
//      of n points (Note [Paired real transforms]);
//   2. FFTW (ESTIMATE) makes the p transforms of length m of the
//      subsequences x[r + p s] into rows T[r] (m has no factor it plans
//      badly, or is split again; a prime m the kernel transforms itself,
//      Note [Direct prime columns]);
//   3. here: T[r][k1] *= w_n^(r k1), then the p-point transforms across
//      the rows, X[k1 + m k2] = sum_r w_p^(r k2) T[r][k1], in the
//      symmetric form (T[j] +- T[p-j], cosines and sines: about p^2 / 2
//      multiply-adds per column), the inner loops running over a block of
//      columns k1 so that they vectorise and stay in L1;
//   4. the result is stored (c2c as it is; r2c of even n split into the
//      transforms of the even and odd samples, X[k] = E[k] + w^k O[k];
//      c2r of even n the real and imaginary parts interleaved; odd n: the
//      pair separated).
// Twiddles and the p-point cosines and sines are computed in double at
// plan time (the tables hold n complex values and (p-1)^2/2 reals, so the
// provider takes this path up to 2^20 points). Planning is one ESTIMATE
// plan of the m-point stage plus those tables: first calls from Python
// (plan and run) took 0.3-0.5 ms for n = 592..2624 against 1.0-1.5 ms with
// FFTW's Rader and Bluestein plans (2026-12-07). Errors stay those of a
// mixed-radix FFT: within a few eps of numpy (the provider conformance and
// numpy tests cover these lengths). Timings (n = 592: 13.0 -> 5.4 us, numpy 7.0; a
// 64x592 batch 708 -> 220 us, torch 260): docs/performance_notes.md ("FFT:
// strided real transforms and medium prime factors"). Pure primes from 97
// on (Rader, FFTW's strength: n = 1009 runs at 2.3x numpy) and factors from
// 97 on (the audit found them fast) are left to FFTW; pure primes from 37
// to 89 are not (Note [Grouped prime factors]).
//
// The factors 17, 19 and 23 (no FFTW codelet either) take the same path:
// batches of 128 complex128 transforms, one thread, against FFTW's
// ESTIMATE plans in the same run (2026-12-07, Xeon VM): n = 255 = 15 * 17
// 187-193 -> 137-147 us, 272 = 16 * 17 198-209 -> 129-136, 1020 1270-1640
// -> 1056-1081, 304 = 16 * 19 235-251 -> 158-167, 184 = 8 * 23 139-145 ->
// 116-134, 171 = 9 * 19 unchanged (115-125); 2-D 255 x 255 complex64 880
// -> 659 us (torch 377), complex128 832 -> 646 (torch 628), the AVX2
// audit's case. Factors 29 and 31 ran
// slower this way (116 = 4 * 29 99-105 -> 111-121 us, 62 = 2 * 31 59-62 ->
// 112-124, 155 = 5 * 31 145-149 -> 166-175) and stay FFTW's.

std::int64_t medium_prime_factor(std::int64_t n) noexcept {
  std::int64_t largest = 1, rest = n;
  for (std::int64_t f = 2; f <= rest / f; ++f) {
    while (rest % f == 0) {
      largest = f;
      rest /= f;
    }
  }
  if (rest > 1) largest = rest;
  // A pure prime from 37 on runs as p transforms of one point (Note
  // [Grouped prime factors]); 17, 19 and 23 alone FFTW runs faster.
  if (!prime_factor_kernel_takes(largest) || (largest == n && n < kMinMediumPrime)) return 0;
  return largest;
}

std::int64_t prime_factor_complex_length(const FftProblem& problem) noexcept {
  const bool real = problem.transform != FftTransform::kC2C;
  return real && problem.dim.n % 2 == 0 ? problem.dim.n / 2 : problem.dim.n;
}

// Note [Direct prime columns]
// When m = n / p is itself a prime the kernel takes (n = 289 = 17 * 17,
// 323 = 17 * 19, 391, 529, ...), step 2's m-point transforms were an FFTW
// plan of p * g transforms of a length FFTW has no codelet for, which it
// ran with its generic O(m^2) solver one strided transform at a time:
// 256 transforms of 289 points took 1048 us in complex128 against torch's
// 633, of 529 complex64 points 1092 against 759 (2026-12-07, Xeon model
// 207, one thread). The kernel now runs that stage as it runs step 3:
// the group's transforms are copied into m rows of g * p columns (row s
// holds each transform's p points x[p s .. p s + p), which are
// contiguous), the direct m-point transforms run across the rows
// (DirectDft, vectorised over the columns), and the result is transposed
// into the rows T[r] step 3 reads.
bool prime_factor_direct_columns(const FftProblem& problem, std::int64_t p) noexcept {
  const std::int64_t m = prime_factor_complex_length(problem) / p;
  if (m < 2 || !prime_factor_kernel_takes(m)) return false;
  for (std::int64_t f = 2; f <= m / f; ++f)
    if (m % f == 0) return false;
  return true;
}

namespace {

// Columns per block of step 3: A and B accumulators of 2 * kBlock reals
// each stay in L1 with the p rows of the block (p * kBlock * 16 bytes).
constexpr std::int64_t kPrimeFactorBlock = 32;

// Note [Grouped prime factors]
// Step 3 vectorises across the m columns of one transform, and a short m
// left its vectors mostly empty: n = 255 = 17 * 15 has 15 complex columns,
// and a batch of 255 such complex64 transforms ran at 0.57 of torch's
// speed (659 against 377 us, 2026-12-07), whose pocketfft runs several
// transforms in the lanes of one vector. The kernel therefore runs a group
// of g transforms at once when m is below kGroupColumns: their m-point
// stages are one FFTW plan of p * g transforms, whose rows put the g
// transforms' columns side by side (prime_factor_columns_problem), so the
// twiddles and the p-point step run over g * m columns; the results are
// then gathered back into each transform's order before it is stored.
// g = ceil(kGroupColumns / m), at most the batch; a last, smaller group
// runs the full group's plan with the unused transforms zeroed.
// A pure prime n = p from 37 to 89 takes the same path with m = 1: the
// rows are the group's points transposed, and step 3 is the direct p-point
// transform across g transforms. FFTW_ESTIMATE ran these lengths with
// Rader's or Bluestein's algorithm, one transform at a time: 256 complex64
// transforms of 37 points took 210 us against torch's 71, of 89 points 768
// against 191 (2026-12-07, Xeon VM, loaded). 17, 19 and 23 alone FFTW runs
// faster than this path (19-24 us for 256 of 17 points against 34-39 us),
// so they stay FFTW's.
constexpr std::int64_t kGroupColumns = 64;

// Note [Paired real transforms]
// A real transform of odd n has no half-length complex form and ran as the
// complex transform of n points with zero imaginary parts: twice the work
// of the data. Two of them run as one complex transform instead: z = x1 +
// i x2 gives Z = X1 + i X2, whence X1[k] = (Z[k] + conj Z[n-k]) / 2 and X2[k]
// = (Z[k] - conj Z[n-k]) / 2i (r2c); the inverse of X1 + i X2, each
// extended to its Hermitian spectrum, is x1 + i x2 (c2r). A batch of c
// such transforms takes ceil(c / 2) complex slots; a last odd one has a
// zero partner.
bool paired_real(const FftProblem& problem) noexcept {
  return problem.transform != FftTransform::kC2C && problem.dim.n % 2 == 1;
}

// The complex transforms a batch of `problem` runs.
std::int64_t complex_slots(const FftProblem& problem) noexcept {
  return paired_real(problem) ? (problem.howmany() + 1) / 2 : problem.howmany();
}

}  // namespace

std::int64_t prime_factor_group(const FftProblem& problem, std::int64_t p) noexcept {
  const std::int64_t m = prime_factor_complex_length(problem) / p;
  return std::max<std::int64_t>(1, std::min((kGroupColumns + m - 1) / m, complex_slots(problem)));
}

FftProblem prime_factor_columns_problem(const FftProblem& problem, std::int64_t p) {
  const std::int64_t nc = prime_factor_complex_length(problem);
  const std::int64_t m = nc / p;
  const std::int64_t group = prime_factor_group(problem, p);
  FftProblem columns;
  columns.transform = FftTransform::kC2C;
  columns.precision = problem.precision;
  columns.sign =
      problem.transform == FftTransform::kC2C ? problem.sign : (problem.transform == FftTransform::kR2C ? -1 : +1);
  columns.dim = FftLoop{m, p, 1};
  columns.batch.push_back(FftLoop{p, 1, group * m});
  if (group > 1) columns.batch.push_back(FftLoop{group, nc, m});
  columns.in_place = false;
  columns.aligned = true;  // the kernel's own workspace arrays
  return columns;
}

namespace {

// The offset of a batch index in the input or the output, the last loop
// fastest.
struct BatchCursor {
  BatchCursor(std::span<const FftLoop> batch, bool input) : loops(batch), in(input), index(batch.size(), 0) {}
  void next() noexcept {
    for (std::size_t l = loops.size(); l-- > 0;) {
      const std::int64_t stride = in ? loops[l].in_stride : loops[l].out_stride;
      offset += stride;
      if (++index[l] < loops[l].n) return;
      offset -= loops[l].n * stride;
      index[l] = 0;
    }
  }
  std::span<const FftLoop> loops;
  bool in;
  SmallVector<std::int64_t, 4> index;
  std::int64_t offset = 0;
};

// The p-point transforms across p rows of `width` complex columns each, in
// the symmetric form of Note [Medium prime factors] step 3 (T[j] +- T[p-j],
// cosines and sines: about p^2 / 2 multiply-adds per column), the inner
// loops running over blocks of columns so that they vectorise and stay in
// L1: X[k][c] = sum_r w_p^(sign r k) T[r][c]. t is overwritten.
template <class R>
class DirectDft {
 public:
  using C = std::complex<R>;

  explicit DirectDft(std::int64_t p) : p_(p), h_((p - 1) / 2) {
    const double two_pi = 2.0 * std::numbers::pi;
    cosines_.resize(static_cast<std::size_t>(h_ * h_));
    sines_.resize(static_cast<std::size_t>(h_ * h_));
    for (std::int64_t k = 1; k <= h_; ++k) {
      for (std::int64_t j = 1; j <= h_; ++j) {
        const double angle = two_pi * static_cast<double>((j * k) % p_) / static_cast<double>(p_);
        cosines_[static_cast<std::size_t>((k - 1) * h_ + (j - 1))] = static_cast<R>(std::cos(angle));
        sines_[static_cast<std::size_t>((k - 1) * h_ + (j - 1))] = static_cast<R>(std::sin(angle));
      }
    }
  }

  std::size_t table_bytes() const noexcept { return 2 * cosines_.size() * sizeof(R); }

  void run(C* t, C* y, std::int64_t width, R sign) const noexcept {
    const std::int64_t m = width, p = p_, h = h_;
    // T[j] <- T[j] + T[p-j] (S_j), T[p-j] <- T[j] - T[p-j] (D_j).
    for (std::int64_t j = 1; j <= h; ++j) {
      R* u = reinterpret_cast<R*>(t + j * m);
      R* v = reinterpret_cast<R*>(t + (p - j) * m);
      for (std::int64_t l = 0; l < 2 * m; ++l) {
        const R a = u[l], b = v[l];
        u[l] = a + b;
        v[l] = a - b;
      }
    }
    alignas(64) R acc_a[2 * kPrimeFactorBlock];
    alignas(64) R acc_b[2 * kPrimeFactorBlock];
    for (std::int64_t c0 = 0; c0 < m; c0 += kPrimeFactorBlock) {
      const std::int64_t lanes = 2 * std::min(kPrimeFactorBlock, m - c0);
      const R* t0 = reinterpret_cast<const R*>(t + c0);
      // X[0]: T[0] + sum of S_j.
      for (std::int64_t l = 0; l < lanes; ++l) acc_a[l] = t0[l];
      for (std::int64_t j = 1; j <= h; ++j) {
        const R* s = reinterpret_cast<const R*>(t + j * m + c0);
        for (std::int64_t l = 0; l < lanes; ++l) acc_a[l] += s[l];
      }
      R* y0 = reinterpret_cast<R*>(y + c0);
      for (std::int64_t l = 0; l < lanes; ++l) y0[l] = acc_a[l];
      for (std::int64_t k = 1; k <= h; ++k) {
        for (std::int64_t l = 0; l < lanes; ++l) acc_a[l] = t0[l];
        for (std::int64_t l = 0; l < lanes; ++l) acc_b[l] = R(0);
        const R* cos_k = cosines_.data() + (k - 1) * h;
        const R* sin_k = sines_.data() + (k - 1) * h;
        for (std::int64_t j = 1; j <= h; ++j) {
          const R c = cos_k[j - 1], sn = sin_k[j - 1];
          const R* s = reinterpret_cast<const R*>(t + j * m + c0);
          const R* d = reinterpret_cast<const R*>(t + (p - j) * m + c0);
          for (std::int64_t l = 0; l < lanes; ++l) {
            acc_a[l] += c * s[l];
            acc_b[l] += sn * d[l];
          }
        }
        // X[k] = A + i sign B, X[p-k] = A - i sign B.
        R* yk = reinterpret_cast<R*>(y + k * m + c0);
        R* yq = reinterpret_cast<R*>(y + (p - k) * m + c0);
        for (std::int64_t l = 0; l < lanes; l += 2) {
          const R re = acc_a[l], im = acc_a[l + 1], bre = sign * acc_b[l], bim = sign * acc_b[l + 1];
          yk[l] = re - bim;
          yk[l + 1] = im + bre;
          yq[l] = re + bim;
          yq[l + 1] = im - bre;
        }
      }
    }
  }

 private:
  std::int64_t p_, h_;
  std::vector<R> cosines_;  // [h][h]: cos(2 pi j k / p)
  std::vector<R> sines_;
};

template <class R>
class PrimeFactorKernel final : public FftKernel {
 public:
  using C = std::complex<R>;

  PrimeFactorKernel(const FftProblem& problem, std::int64_t p, std::shared_ptr<const FftKernel> columns)
      : problem_(problem),
        n_(problem.dim.n),
        nc_(prime_factor_complex_length(problem)),
        p_(p),
        m_(nc_ / p),
        group_(prime_factor_group(problem, p)),
        paired_(paired_real(problem)),
        columns_(std::move(columns)),
        dft_p_(p) {
    sign_ = prime_factor_columns_problem(problem, p).sign;
    if (prime_factor_direct_columns(problem, p)) dft_m_.emplace(m_);  // Note [Direct prime columns]
    slot_ = (static_cast<std::size_t>(group_ * nc_) * sizeof(C) + 63) / 64 * 64;
    const double two_pi = 2.0 * std::numbers::pi;
    twiddles_.resize(static_cast<std::size_t>(nc_));
    for (std::int64_t r = 0; r < p_; ++r) {
      for (std::int64_t k = 0; k < m_; ++k) {
        const double angle = two_pi * static_cast<double>((r * k) % nc_) / static_cast<double>(nc_);
        twiddles_[static_cast<std::size_t>(r * m_ + k)] =
            C(static_cast<R>(std::cos(angle)), static_cast<R>(sign_ * std::sin(angle)));
      }
    }
    if (nc_ != n_) {  // w^k = exp(-2 pi i k / n), k <= n/2: the real/half-length split
      half_twiddles_.resize(static_cast<std::size_t>(nc_ + 1));
      for (std::int64_t k = 0; k <= nc_; ++k) {
        const double angle = two_pi * static_cast<double>(k) / static_cast<double>(n_);
        half_twiddles_[static_cast<std::size_t>(k)] =
            C(static_cast<R>(std::cos(angle)), static_cast<R>(-std::sin(angle)));
      }
    }
  }

  std::size_t workspace_bytes() const noexcept override {
    return 2 * slot_ + (columns_ ? columns_->workspace_bytes() : 0);
  }
  std::size_t table_bytes() const noexcept override {
    return (twiddles_.size() + half_twiddles_.size()) * sizeof(C) + dft_p_.table_bytes() +
           (dft_m_ ? dft_m_->table_bytes() : 0) + (columns_ ? columns_->table_bytes() : 0);
  }
  bool accepts(const void*, const void*) const noexcept override { return true; }

  Status execute(void* in, void* out, std::span<std::byte> workspace) const noexcept override {
    C* x = reinterpret_cast<C*>(workspace.data());          // the group's transforms, then the combined rows
    C* t = reinterpret_cast<C*>(workspace.data() + slot_);  // the rows T[r] of step 2, then the results
    const std::span<std::byte> rest = workspace.subspan(2 * slot_);
    BatchCursor read(problem_.batch, true), write(problem_.batch, false);
    const std::int64_t count = problem_.howmany();
    std::int64_t loaded = 0, stored = 0;  // transforms of the batch
    while (loaded < count) {
      std::int64_t size = 0;  // complex slots of this group
      for (; size < group_ && loaded < count; ++size) {
        const std::int64_t first = read.offset;
        read.next();
        ++loaded;
        if (!paired_) {
          load(in, first, x + size * nc_);
          continue;
        }
        const bool second = loaded < count;  // Note [Paired real transforms]
        load_pair(in, first, second ? read.offset : first, second, x + size * nc_);
        if (second) {
          read.next();
          ++loaded;
        }
      }
      std::fill(x + size * nc_, x + group_ * nc_, C(0));  // a last, smaller group
      if (columns_) {
        TENFERRO_TRY(columns_->execute(x, t, rest));
      } else if (dft_m_) {
        direct_columns(x, t);
      } else {  // a pure prime (m = 1): the rows are the group's points, transposed
        for (std::int64_t r = 0; r < p_; ++r)
          for (std::int64_t b = 0; b < group_; ++b) t[r * group_ + b] = x[b * nc_ + r];
      }
      combine(t, x);
      // Note [Grouped prime factors]: rows of the group's columns -> each
      // transform's X[k1 + m k2] (one transform: its order already).
      const std::int64_t width = group_ * m_;
      for (std::int64_t b = 0; b < size; ++b) {
        C* result = x;
        if (group_ > 1) {
          result = t + b * nc_;
          for (std::int64_t k2 = 0; k2 < p_; ++k2) std::copy_n(x + k2 * width + b * m_, m_, result + k2 * m_);
        }
        const std::int64_t first = write.offset;
        write.next();
        ++stored;
        if (!paired_) {
          store(result, out, first);
          continue;
        }
        const bool second = stored < count;
        store_pair(result, out, first, second ? write.offset : first, second);
        if (second) {
          write.next();
          ++stored;
        }
      }
    }
    return ok_status();
  }

 private:
  // One complex point as one move: std::complex<float>'s assignment
  // compiled to two 4-byte loads and stores (15 % of a 255-point batch's
  // profile).
  static void copy_point(const C* from, C* to) noexcept { std::memcpy(static_cast<void*>(to), from, sizeof(C)); }

  // One transform (c2c, or a real one of even n; odd n: load_pair). n_
  // and nc_ read once: for the compiler, the stores could alias *this.
  void load(const void* in, std::int64_t offset, C* x) const noexcept {
    const std::int64_t s = problem_.dim.in_stride, n = n_, nc = nc_;
    switch (problem_.transform) {
      case FftTransform::kC2C: {
        const C* src = static_cast<const C*>(in) + offset;
        for (std::int64_t j = 0; j < n; ++j) copy_point(src + j * s, x + j);
        break;
      }
      case FftTransform::kR2C: {  // z[j] = x[2j] + i x[2j+1]
        const R* src = static_cast<const R*>(in) + offset;
        for (std::int64_t j = 0; j < nc; ++j) x[j] = C(src[2 * j * s], src[(2 * j + 1) * s]);
        break;
      }
      case FftTransform::kC2R:
        load_half_spectrum(static_cast<const C*>(in) + offset, s, x);
        break;
    }
  }

  void store(const C* y, void* out, std::int64_t offset) const noexcept {
    const std::int64_t s = problem_.dim.out_stride, n = n_, nc = nc_;
    switch (problem_.transform) {
      case FftTransform::kC2C: {
        C* dst = static_cast<C*>(out) + offset;
        for (std::int64_t k = 0; k < n; ++k) copy_point(y + k, dst + k * s);
        break;
      }
      case FftTransform::kR2C:
        store_half_spectrum(y, static_cast<C*>(out) + offset, s);
        break;
      case FftTransform::kC2R: {  // x[2j] = Re z[j], x[2j+1] = Im z[j]
        R* dst = static_cast<R*>(out) + offset;
        for (std::int64_t j = 0; j < nc; ++j) {
          dst[2 * j * s] = y[j].real();
          dst[(2 * j + 1) * s] = y[j].imag();
        }
        break;
      }
    }
  }

  // Note [Paired real transforms]: z = x1 + i x2 (r2c), or X1 + i X2 each
  // extended to its Hermitian spectrum (c2r). Without a second transform
  // its part is zero.
  void load_pair(const void* in, std::int64_t first, std::int64_t second, bool has_second, C* z) const noexcept {
    const std::int64_t s = problem_.dim.in_stride, n = n_;
    if (problem_.transform == FftTransform::kR2C) {
      const R* a = static_cast<const R*>(in) + first;
      const R* b = static_cast<const R*>(in) + second;
      for (std::int64_t j = 0; j < n; ++j) z[j] = C(a[j * s], has_second ? b[j * s] : R(0));
      return;
    }
    const C* a = static_cast<const C*>(in) + first;
    const C* b = static_cast<const C*>(in) + second;
    const R* ar = reinterpret_cast<const R*>(a);
    const R* br = reinterpret_cast<const R*>(b);
    R* zr = reinterpret_cast<R*>(z);
    // Z[k] = X1[k] + i X2[k], Z[n-k] = conj X1[k] + i conj X2[k] (k <= n/2;
    // the imaginary parts of X1[0] and X2[0] dropped, as FFTW and numpy do).
    for (std::int64_t k = 0; k <= n / 2; ++k) {
      const R x1r = ar[2 * k * s], x1i = k == 0 ? R(0) : ar[2 * k * s + 1];
      const R x2r = has_second ? br[2 * k * s] : R(0);
      const R x2i = has_second && k != 0 ? br[2 * k * s + 1] : R(0);
      zr[2 * k] = x1r - x2i;
      zr[2 * k + 1] = x1i + x2r;
      if (k != 0) {
        zr[2 * (n - k)] = x1r + x2i;
        zr[2 * (n - k) + 1] = x2r - x1i;
      }
    }
  }

  void store_pair(const C* z, void* out, std::int64_t first, std::int64_t second, bool has_second) const noexcept {
    const std::int64_t s = problem_.dim.out_stride, n = n_;
    const R* zr = reinterpret_cast<const R*>(z);
    if (problem_.transform == FftTransform::kC2R) {  // x1 = Re z, x2 = Im z
      R* a = static_cast<R*>(out) + first;
      R* b = static_cast<R*>(out) + second;
      for (std::int64_t j = 0; j < n; ++j) a[j * s] = zr[2 * j];
      if (has_second)
        for (std::int64_t j = 0; j < n; ++j) b[j * s] = zr[2 * j + 1];
      return;
    }
    R* a = reinterpret_cast<R*>(static_cast<C*>(out) + first);
    R* b = reinterpret_cast<R*>(static_cast<C*>(out) + second);
    for (std::int64_t k = 0; k <= n / 2; ++k) {
      const std::int64_t c = k == 0 ? 0 : n - k;
      const R pr = zr[2 * k], pi = zr[2 * k + 1], qr = zr[2 * c], qi = -zr[2 * c + 1];  // Z[k], conj Z[n-k]
      a[2 * k * s] = R(0.5) * (pr + qr);
      a[2 * k * s + 1] = R(0.5) * (pi + qi);
      if (has_second) {  // (Z[k] - conj Z[n-k]) / 2i
        b[2 * k * s] = R(0.5) * (pi - qi);
        b[2 * k * s + 1] = R(-0.5) * (pr - qr);
      }
    }
  }

  // r2c of even n from Z, the n/2-point transform of z[j] = x[2j] + i x[2j+1]:
  // E[k] = (Z[k] + conj Z[n/2-k]) / 2 and O[k] = -i (Z[k] - conj Z[n/2-k]) / 2
  // are the transforms of the even and odd samples, X[k] = E[k] + w^k O[k].
  void store_half_spectrum(const C* z, C* dst, std::int64_t s) const noexcept {
    // On reals: std::complex temporaries compiled to 4-byte stores and an
    // 8-byte reload per point (a store-forwarding stall: 0.4 ms of a
    // float32 64x1998 rfft).
    const std::int64_t h = nc_;
    const R* zr = reinterpret_cast<const R*>(z);
    const R* w = reinterpret_cast<const R*>(half_twiddles_.data());
    R* d = reinterpret_cast<R*>(dst);
    for (std::int64_t k = 0; k <= h; ++k) {
      const std::int64_t i = k == h ? 0 : k, j = k == 0 ? 0 : h - k;  // Z[h] = Z[0] (no division per point)
      const R ar = zr[2 * i], ai = zr[2 * i + 1], br = zr[2 * j], bi = -zr[2 * j + 1];
      const R er = R(0.5) * (ar + br), ei = R(0.5) * (ai + bi);
      const R orr = R(0.5) * (ai - bi), oi = R(-0.5) * (ar - br);
      const R wr = w[2 * k], wi = w[2 * k + 1];
      d[2 * k * s] = er + wr * orr - wi * oi;
      d[2 * k * s + 1] = ei + wr * oi + wi * orr;
    }
  }

  // c2r of even n: Z[k] = A[k] + i B[k] with A[k] = X[k] + conj X[n/2-k] and
  // B[k] = (X[k] - conj X[n/2-k]) conj(w^k), whose inverse n/2-point
  // transform z holds the even samples in its real and the odd in its
  // imaginary parts. The imaginary parts of X[0] and X[n/2] are dropped.
  void load_half_spectrum(const C* src, std::int64_t s, C* z) const noexcept {
    const std::int64_t h = nc_;
    const R* x = reinterpret_cast<const R*>(src);
    const R* w = reinterpret_cast<const R*>(half_twiddles_.data());
    R* zr = reinterpret_cast<R*>(z);
    for (std::int64_t k = 0; k < h; ++k) {
      const std::int64_t j = h - k;
      const R ar = x[2 * k * s], ai = k == 0 ? R(0) : x[2 * k * s + 1];
      const R br = x[2 * j * s], bi = j == h ? R(0) : -x[2 * j * s + 1];  // conj X[h-k]
      const R sr = ar + br, si = ai + bi, dr = ar - br, di = ai - bi;
      const R wr = w[2 * k], wi = w[2 * k + 1];  // times conj(w^k)
      const R tr = dr * wr + di * wi, ti = di * wr - dr * wi;
      zr[2 * k] = sr - ti;
      zr[2 * k + 1] = si + tr;
    }
  }

  // Step 3 of Note [Medium prime factors]: rows t[r] (m each) -> y.
  // Rows of the group's g * m columns (Note [Grouped prime factors]).
  void combine(C* t, C* y) const noexcept {
    const std::int64_t m = group_ * m_, p = p_;
    for (std::int64_t r = 1; r < p; ++r) {
      const R* w = reinterpret_cast<const R*>(twiddles_.data() + r * m_);
      for (std::int64_t b = 0; b < group_; ++b) {
        R* row = reinterpret_cast<R*>(t + r * m + b * m_);
        for (std::int64_t k = 0; k < m_; ++k) {
          const R a = row[2 * k], bi = row[2 * k + 1], c = w[2 * k], d = w[2 * k + 1];
          row[2 * k] = a * c - bi * d;
          row[2 * k + 1] = a * d + bi * c;
        }
      }
    }
    dft_p_.run(t, y, m, static_cast<R>(sign_));
  }

  // Note [Direct prime columns]: the m-point stage of step 2 as direct
  // m-point transforms across the group's p * g subsequences. x holds the
  // group's transforms; the rows T[r] (g * m columns) end in t, x is
  // overwritten.
  void direct_columns(C* x, C* t) const noexcept {
    const std::int64_t p = p_, m = m_, g = group_, nc = nc_, width = g * p;
    // U[s][b p + r] = x_b[p s + r]: row s holds the group's runs of p points.
    for (std::int64_t s = 0; s < m; ++s)
      for (std::int64_t b = 0; b < g; ++b)
        std::memcpy(static_cast<void*>(t + s * width + b * p), x + b * nc + p * s, sizeof(C) * p);
    dft_m_->run(t, x, width, static_cast<R>(sign_));  // V[k1][b p + r] in x
    // T[r][b m + k1] = V[k1][b p + r].
    for (std::int64_t k1 = 0; k1 < m; ++k1) {
      const C* v = x + k1 * width;
      for (std::int64_t b = 0; b < g; ++b)
        for (std::int64_t r = 0; r < p; ++r) copy_point(v + b * p + r, t + r * (g * m) + b * m + k1);
    }
  }

  FftProblem problem_;
  std::int64_t n_;   // the transform's length
  std::int64_t nc_;  // the complex transform's: n, or n/2 for a real transform of even n
  std::int64_t p_, m_;
  std::int64_t group_;  // complex transforms run together (Note [Grouped prime factors])
  bool paired_;         // two real transforms of odd n per complex one (Note [Paired real transforms])
  int sign_ = -1;
  std::size_t slot_ = 0;
  std::shared_ptr<const FftKernel> columns_;  // the m-point stage: FFTW's, or null (m = 1, or dft_m_)
  std::vector<C> twiddles_;                   // [p][m]: w_nc^(r k1)
  std::vector<C> half_twiddles_;              // exp(-2 pi i k / n), k <= n/2 (real transforms of even n)
  DirectDft<R> dft_p_;                        // step 3
  std::optional<DirectDft<R>> dft_m_;         // a prime m-point stage (Note [Direct prime columns])
};

}  // namespace

Result<std::shared_ptr<const FftKernel>> make_prime_factor_kernel(const FftProblem& problem, std::int64_t p,
                                                                  std::shared_ptr<const FftKernel> columns) {
  if (problem.precision == DType::kFloat32) {
    return std::shared_ptr<const FftKernel>(std::make_shared<PrimeFactorKernel<float>>(problem, p, std::move(columns)));
  }
  return std::shared_ptr<const FftKernel>(std::make_shared<PrimeFactorKernel<double>>(problem, p, std::move(columns)));
}

}  // namespace tenferro::fft::internal
