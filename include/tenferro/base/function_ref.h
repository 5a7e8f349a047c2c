// FunctionRef<R(Args...)>: a non-owning, non-allocating reference to a
// callable, for synchronous callbacks on hot paths (executor entry, parallel
// loops, visitors). Like llvm::function_ref: the referenced callable must
// outlive every call; never store a FunctionRef beyond the call it was passed
// to.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace tenferro {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  /// No callable (as llvm::function_ref): test with operator bool before calling.
  FunctionRef() noexcept = default;
  FunctionRef(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  explicit operator bool() const noexcept { return call_ != nullptr; }

  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)
  noexcept {  // NOLINT(google-explicit-constructor): binds like a reference
    using Callee = std::remove_reference_t<F>;
    if constexpr (std::is_function_v<Callee>) {
      target_.function = reinterpret_cast<void (*)()>(&f);
      call_ = [](Target target, Args... args) -> R {
        return reinterpret_cast<Callee*>(target.function)(std::forward<Args>(args)...);
      };
    } else {
      target_.object = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
      call_ = [](Target target, Args... args) -> R {
        return (*static_cast<Callee*>(target.object))(std::forward<Args>(args)...);
      };
    }
  }

  R operator()(Args... args) const { return call_(target_, std::forward<Args>(args)...); }

 private:
  union Target {
    void* object;
    void (*function)();
  };
  Target target_{};
  R (*call_)(Target, Args...) = nullptr;
};

}  // namespace tenferro
