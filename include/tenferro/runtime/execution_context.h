// ErasedExecutionContext: the engine-typed execution context (an entered CPU
// domain, a GPU stream, ...) passed through the engine-neutral runtime to a
// provider, which recovers its typed context with exactly one type check.
//
// Note [Erased execution context]
// The runtime never knows what an engine's context contains. An engine's
// executor creates its typed context (for the CPU engine: the entered
// domain's ParallelContext, scratch pools and lease) and hands the provider
// an ErasedExecutionContext, two pointers: a type tag and the object. The
// provider calls `get<CpuExecutionContext>()`: one pointer comparison, no
// allocation, no RTTI. Preparation validates the same identity once (the
// engine's executor declares its context type), so a mismatch at run time is
// a provider contract violation rather than a user error.
#pragma once

#include <cstdint>

namespace tenferro::runtime {

/// The identity of a typed execution context, usable as a value. Two ids are
/// equal exactly when they name the same C++ type. Trivially copyable.
class ExecutionContextTypeId {
 public:
  constexpr ExecutionContextTypeId() noexcept = default;

  /// The id of context type T.
  template <class T>
  static constexpr ExecutionContextTypeId of() noexcept {
    return ExecutionContextTypeId(&kTag<T>);
  }

  constexpr bool valid() const noexcept { return tag_ != nullptr; }
  friend constexpr bool operator==(ExecutionContextTypeId, ExecutionContextTypeId) noexcept = default;

 private:
  // One constant byte per type: its address is the identity. Constant data,
  // never mutated, so it is not process-global state.
  template <class T>
  static constexpr char kTag = 0;

  constexpr explicit ExecutionContextTypeId(const char* tag) noexcept : tag_(tag) {}
  const char* tag_ = nullptr;
};

/// A borrowed, type-erased pointer to an engine's execution context. Valid
/// only during the provider call it is passed to; never store it. Copying is
/// two pointer copies. Thread-compatible.
class ErasedExecutionContext {
 public:
  constexpr ErasedExecutionContext() noexcept = default;

  /// Borrows `context` (which must outlive the erased view).
  template <class T>
  static constexpr ErasedExecutionContext of(T& context) noexcept {
    return ErasedExecutionContext(ExecutionContextTypeId::of<T>(), &context);
  }

  constexpr ExecutionContextTypeId type() const noexcept { return type_; }
  constexpr bool empty() const noexcept { return object_ == nullptr; }

  /// The typed context when this context is a T, else nullptr (one
  /// comparison, no allocation).
  template <class T>
  T* get() const noexcept {
    return type_ == ExecutionContextTypeId::of<T>() ? static_cast<T*>(object_) : nullptr;
  }

 private:
  constexpr ErasedExecutionContext(ExecutionContextTypeId type, void* object) noexcept : type_(type), object_(object) {}
  ExecutionContextTypeId type_;
  void* object_ = nullptr;
};

/// The context of engines that need none (reference engines, tests).
struct NoExecutionContext {};

}  // namespace tenferro::runtime
