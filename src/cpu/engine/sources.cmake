# engine/: the CPU engine's runtime registration (capability slots over the
# kernels and the dot_general composite, executor, allocator, cache owner).
# Paths are relative to src/cpu.
list(APPEND TENFERRO_CPU_SOURCES
  engine/dot_general_slot.cpp
  engine/elementwise_slot.cpp
  engine/engine.cpp
  engine/indexing_slot.cpp
  engine/reduction_slot.cpp
  engine/request_checks.cpp
)

