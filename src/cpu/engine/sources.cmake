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

# Engine tests link the reference evaluator (tenferro::testing), and the
# allocation test replaces the global operator new, so both get programs of
# their own, created once tenferro_cpu exists (this file is included first).
if(TENFERRO_BUILD_TESTS)
  cmake_language(DEFER CALL tenferro_unit_test_program tenferro_cpu_engine_tests tenferro_cpu "unit:cpu"
    SOURCES engine/conformance_test.cpp engine/engine_test.cpp engine/numpy_sample_test.cpp
    DEPENDS tenferro::testing)
  cmake_language(DEFER CALL tenferro_unit_test_program tenferro_cpu_engine_alloc_tests tenferro_cpu "unit:cpu"
    SOURCES engine/eager_allocation_test.cpp DEPENDS tenferro_counting_new)
endif()
