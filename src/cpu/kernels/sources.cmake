# CPU kernels (elementwise, reduction, indexing, creation, layout): plain
# functions over borrowed TensorViews and a ParallelContext.
list(APPEND TENFERRO_CPU_SOURCES
  kernels/elementwise.cpp
  kernels/layout.cpp
  kernels/validation.cpp
)
list(APPEND TENFERRO_CPU_TESTS
  kernels/elementwise_test.cpp
  kernels/layout_test.cpp
)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb)
