// The null provider skeleton, the bundle's slot access and the error helpers
// every provider shares (Note [Linalg provider contract]).
#include "tenferro/linalg_cpu/linalg_provider.h"

#include <algorithm>

namespace tenferro::linalg {

namespace {

class NullLinalgProvider final : public CpuLinalgProvider {
 public:
  std::string_view name() const noexcept override { return "null"; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }

 private:
  cpu::ProviderCapability capability_{cpu::ThreadCountControl::kSequential, cpu::PlacementControl::kCallingThread,
                                      "null provider: computes nothing"};
};

}  // namespace

Result<LinalgKernelPlan> CpuLinalgProvider::plan(const LinalgProblem& problem) const {
  return unsupported_problem(name(), problem, "the operation is not implemented by this provider");
}

Status CpuLinalgProvider::run(const LinalgProblem& problem, const LinalgKernelPlan& /*plan*/,
                              const LinalgBuffers& /*buffers*/, std::span<std::byte> /*workspace*/) const {
  return unsupported_problem(name(), problem, "the operation is not implemented by this provider");
}

std::shared_ptr<const CpuLinalgProvider> make_null_linalg_provider() { return std::make_shared<NullLinalgProvider>(); }

LinalgProviderBundle LinalgProviderBundle::all(const std::shared_ptr<const CpuLinalgProvider>& provider) {
  LinalgProviderBundle b;
  for (int s = 0; s < kNumLinalgSlots; ++s) b.set(static_cast<LinalgSlot>(s), provider);
  return b;
}

namespace {
template <class Bundle>
auto* member(Bundle& b, LinalgSlot slot) noexcept {
  static_assert(kNumLinalgSlots == static_cast<int>(LinalgSlot::kNone));
  switch (slot) {
    case LinalgSlot::kSvd:
      return &b.svd;
    case LinalgSlot::kQr:
      return &b.qr;
    case LinalgSlot::kEigh:
      return &b.eigh;
    case LinalgSlot::kEigvalsh:
      return &b.eigvalsh;
    case LinalgSlot::kEig:
      return &b.eig;
    case LinalgSlot::kCholesky:
      return &b.cholesky;
    case LinalgSlot::kLu:
      return &b.lu;
    case LinalgSlot::kSolve:
      return &b.solve;
    case LinalgSlot::kTriangularSolve:
      return &b.triangular_solve;
    case LinalgSlot::kInverse:
      return &b.inverse;
    case LinalgSlot::kLstsq:
      return &b.lstsq;
    case LinalgSlot::kPinv:
      return &b.pinv;
    case LinalgSlot::kNone:
      break;
  }
  return static_cast<decltype(&b.svd)>(nullptr);
}
}  // namespace

std::shared_ptr<const CpuLinalgProvider> LinalgProviderBundle::get(LinalgSlot slot) const noexcept {
  const auto* p = member(*this, slot);
  return p != nullptr ? *p : nullptr;
}

void LinalgProviderBundle::set(LinalgSlot slot, std::shared_ptr<const CpuLinalgProvider> provider) noexcept {
  if (auto* p = member(*this, slot)) *p = std::move(provider);
}

Error singular_matrix_error(LinalgOpKind op, std::int64_t info) {
  return make_error(ErrorCode::kSingularMatrix, ErrorStage::kNone,
                    "linalg.{}: expected a non-singular matrix, found an exactly zero pivot U({}, {}) (LAPACK info = "
                    "{})",
                    to_string(op), info, info, info);
}

Error not_positive_definite_error(std::int64_t info) {
  return make_error(ErrorCode::kNotPositiveDefinite, ErrorStage::kNone,
                    "linalg.cholesky: expected a Hermitian positive-definite matrix, found the leading minor of order "
                    "{} not positive definite (LAPACK info = {})",
                    info, info);
}

Error no_convergence_error(LinalgOpKind op, std::string_view provider, std::int64_t info) {
  return make_error(ErrorCode::kNoConvergence, ErrorStage::kNone,
                    "linalg.{}: expected the {} iteration to converge, found no convergence (info = {})", to_string(op),
                    provider, info);
}

Error unsupported_problem(std::string_view provider, const LinalgProblem& problem, std::string_view why) {
  return make_error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
                    "linalg provider {} does not support {} {} {}x{}: {}", provider, to_string(problem.kind()),
                    problem.dtype, problem.m, problem.n, why);
}

}  // namespace tenferro::linalg
