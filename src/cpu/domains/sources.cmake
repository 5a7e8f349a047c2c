# CPU resource domains: topology (hwloc), domain specs and validation,
# managed (oneTBB) and external executors, entered execution contexts,
# node-local memory pools and provider placement checks (the affinity policy
# is the runtime's: resolve_placement in src/runtime/schedule.cpp). Paths are
# relative to src/cpu.
list(APPEND TENFERRO_CPU_SOURCES
  domains/cpu_domain_set.cpp
  domains/cpu_resource_domain.cpp
  domains/cpu_set.cpp
  domains/domain_spec.cpp
  domains/managed_executor.cpp
  domains/memory_pool.cpp
  domains/provider_placement.cpp
  domains/thread_state.cpp
  domains/topology.cpp
)
# Every domain test also runs under ThreadSanitizer (label unit:cpu:tsan).
list(APPEND TENFERRO_CPU_TSAN_TESTS
  domains/cpu_set_test.cpp
  domains/domain_spec_test.cpp
  domains/external_domain_test.cpp
  domains/managed_domain_test.cpp
  domains/memory_pool_test.cpp
  domains/provider_placement_test.cpp
  domains/topology_test.cpp
)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb PkgConfig::HWLOC)
# oneTBB is not instrumented for ThreadSanitizer, so neither is the one file
# that uses it (Note [ThreadSanitizer and oneTBB] in managed_executor.cpp).
if(TENFERRO_SANITIZE MATCHES "thread")
  set_source_files_properties(domains/managed_executor.cpp PROPERTIES
    COMPILE_OPTIONS -fno-sanitize=thread COMPILE_DEFINITIONS TENFERRO_TSAN_ANNOTATIONS=1)
endif()
