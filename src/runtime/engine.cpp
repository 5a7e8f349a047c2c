// The default host engine allocator, placement formatting and the transient
// failure classification of the plan cache.
#include "tenferro/runtime/spi/engine.h"

#include <utility>

#include <fmt/format.h>

#include "tenferro/runtime/plan_cache.h"

namespace tenferro::runtime {
namespace {

class HostEngineAllocator final : public EngineAllocator {
 public:
  explicit HostEngineAllocator(std::shared_ptr<HostAllocator> allocator) : allocator_(std::move(allocator)) {}
  Result<StorageRef> allocate(std::size_t nbytes, ResolvedPlacement /*placement*/) noexcept override {
    try {
      return Storage::allocate_host(nbytes, allocator_);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kNone, "host engine allocator");
    }
  }

 private:
  std::shared_ptr<HostAllocator> allocator_;
};

}  // namespace

std::shared_ptr<EngineAllocator> make_host_engine_allocator(std::shared_ptr<HostAllocator> allocator) {
  return std::make_shared<HostEngineAllocator>(std::move(allocator));
}

std::string Placement::to_string() const {
  switch (kind_) {
    case Kind::kDefault:
      return "default";
    case Kind::kEngine:
      return fmt::format("engine {}", engine_);
    case Kind::kCpuDomain:
      return engine_.valid() ? fmt::format("cpu domain {} of engine {}", domain_, engine_)
                             : fmt::format("cpu domain {}", domain_);
    case Kind::kDevice:
      return engine_.valid() ? fmt::format("device {} of engine {}", domain_, engine_)
                             : fmt::format("device {}", domain_);
  }
  return "unknown";
}

bool is_transient_failure(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kResourceExhausted:
    case ErrorCode::kUnavailable:
    case ErrorCode::kCancelled:
    case ErrorCode::kDeadlineExceeded:
    case ErrorCode::kAborted:
    case ErrorCode::kRuntimeStopped:
      return true;
    default:
      return false;
  }
}

}  // namespace tenferro::runtime
