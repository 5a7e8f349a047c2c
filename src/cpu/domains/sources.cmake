# CPU resource domains: topology (hwloc), domain specs and validation,
# managed (oneTBB) and external executors, entered execution contexts,
# node-local memory pools, provider placement checks and the affinity
# resolver. Paths are relative to src/cpu.
list(APPEND TENFERRO_CPU_SOURCES
  domains/cpu_set.cpp
  domains/topology.cpp
)
list(APPEND TENFERRO_CPU_TESTS
  domains/cpu_set_test.cpp
  domains/topology_test.cpp
)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb PkgConfig::HWLOC)
