// KernelTable: the CPU kernels as a table of function pointers, so that the
// kernel tests are written once and run against any implementation (the
// future provider conformance suite instantiates them with other tables).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tenferro/cpu/kernels/creation.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/cpu/kernels/indexing.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu/kernels/reduction.h"

namespace tenferro::cpu::testing {

struct KernelTable {
  const char* name;
  decltype(&cpu::unary) unary;
  decltype(&cpu::binary) binary;
  decltype(&cpu::compare) compare;
  decltype(&cpu::select) select;
  decltype(&cpu::convert) convert;
  decltype(&cpu::copy_into) copy_into;
  decltype(&cpu::fill) fill;
  decltype(&cpu::iota) iota;
  decltype(&cpu::reduce) reduce;
  decltype(&cpu::arg_reduce) arg_reduce;
  decltype(&cpu::gather) gather;
  decltype(&cpu::scatter) scatter;
  decltype(&cpu::dynamic_slice) dynamic_slice;
  decltype(&cpu::dynamic_update_slice) dynamic_update_slice;
  decltype(&cpu::concatenate) concatenate;
  decltype(&cpu::pad) pad;
  decltype(&cpu::reverse) reverse;
};

/// The native CPU kernels.
inline const KernelTable kNativeKernels = {
    .name = "native",
    .unary = &cpu::unary,
    .binary = &cpu::binary,
    .compare = &cpu::compare,
    .select = &cpu::select,
    .convert = &cpu::convert,
    .copy_into = &cpu::copy_into,
    .fill = &cpu::fill,
    .iota = &cpu::iota,
    .reduce = &cpu::reduce,
    .arg_reduce = &cpu::arg_reduce,
    .gather = &cpu::gather,
    .scatter = &cpu::scatter,
    .dynamic_slice = &cpu::dynamic_slice,
    .dynamic_update_slice = &cpu::dynamic_update_slice,
    .concatenate = &cpu::concatenate,
    .pad = &cpu::pad,
    .reverse = &cpu::reverse,
};

inline std::string kernel_table_name(const ::testing::TestParamInfo<const KernelTable*>& info) {
  return info.param->name;
}

}  // namespace tenferro::cpu::testing
