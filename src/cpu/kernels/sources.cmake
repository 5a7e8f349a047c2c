# CPU kernels (elementwise, reduction, indexing, creation, layout): plain
# functions over borrowed TensorViews and a ParallelContext.
list(APPEND TENFERRO_CPU_SOURCES
  kernels/creation.cpp
  kernels/elementwise.cpp
  kernels/gather_scatter.cpp
  kernels/layout.cpp
  kernels/reduction.cpp
  kernels/slicing.cpp
  kernels/validation.cpp
)
list(APPEND TENFERRO_CPU_TESTS
  kernels/elementwise_test.cpp
  kernels/indexing_test.cpp
  kernels/layout_test.cpp
  kernels/reduction_test.cpp
)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb)
