/* The example of docs/c_api.md: C = A B for 2x2 matrices, planned once and
 * run twice, then one error. Built and run by ctest (c_api_example). */
#include <stdio.h>

#include "tenferro/c/tenferro.h"

static int fail(const char* what, tf_error* error) {
  fprintf(stderr, "%s: %s (%s)\n", what, tf_error_message(error), tf_code_name(tf_error_code(error)));
  tf_error_destroy(error);
  return 1;
}

int main(void) {
  double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4];
  const int64_t shape[2] = {2, 2};
  const int64_t transposed[2] = {1, 2}; /* strides in elements: b read as B^T */
  tf_error* error = NULL;

  tf_runtime_options options = {.struct_size = sizeof(tf_runtime_options), .threads = 1, .gemm = TF_GEMM_NATIVE};
  tf_runtime* rt = NULL;
  if (tf_runtime_create(&options, &rt, &error) != TF_CODE_OK) return fail("tf_runtime_create", error);

  /* Operands: caller-owned memory; strides NULL means row-major. */
  tf_tensor ta = {.struct_size = sizeof(tf_tensor), .data = a, .shape = shape, .ndim = 2, .dtype = TF_DTYPE_F64};
  tf_tensor tb = {.struct_size = sizeof(tf_tensor), .data = b, .shape = shape, .ndim = 2, .dtype = TF_DTYPE_F64};
  tf_tensor tc = {.struct_size = sizeof(tf_tensor), .data = c, .shape = shape, .ndim = 2, .dtype = TF_DTYPE_F64};
  const tf_tensor* inputs[2] = {&ta, &tb};

  /* Plan once (only shapes and dtype are read)... */
  tf_einsum_prepare_args prepare = {.struct_size = sizeof(tf_einsum_prepare_args),
                                    .runtime = rt,
                                    .subscripts = "ij,jk->ik",
                                    .inputs = inputs,
                                    .num_inputs = 2,
                                    .planner = TF_PLANNER_AUTO};
  tf_einsum_plan* plan = NULL;
  if (tf_einsum_prepare(&prepare, &plan, &error) != TF_CODE_OK) return fail("tf_einsum_prepare", error);

  tf_einsum_plan_info info = {.struct_size = sizeof(tf_einsum_plan_info)};
  if (tf_einsum_plan_get_info(plan, &info, &error) != TF_CODE_OK) return fail("tf_einsum_plan_get_info", error);
  printf("%g flops, largest intermediate %g elements, planner %s\n", info.flops, info.largest_intermediate,
         info.planner);

  /* ...run many times, on any data of those shapes and any strides. */
  tf_einsum_run_args run = {
      .struct_size = sizeof(tf_einsum_run_args), .plan = plan, .inputs = inputs, .num_inputs = 2, .output = &tc};
  if (tf_einsum_run(&run, &error) != TF_CODE_OK) return fail("tf_einsum_run", error);
  printf("A B   = [[%g, %g], [%g, %g]]\n", c[0], c[1], c[2], c[3]); /* [[19, 22], [43, 50]] */
  tb.strides = transposed;
  if (tf_einsum_run(&run, &error) != TF_CODE_OK) return fail("tf_einsum_run", error);
  printf("A B^T = [[%g, %g], [%g, %g]]\n", c[0], c[1], c[2], c[3]); /* [[17, 23], [39, 53]] */

  /* Errors are values: a wrong output shape comes back as a code + message. */
  const int64_t wrong[1] = {4};
  tf_tensor bad = {.struct_size = sizeof(tf_tensor), .data = c, .shape = wrong, .ndim = 1, .dtype = TF_DTYPE_F64};
  tf_einsum_args once = {.struct_size = sizeof(tf_einsum_args),
                         .runtime = rt,
                         .subscripts = "ij,jk->ik",
                         .inputs = inputs,
                         .num_inputs = 2,
                         .output = &bad};
  if (tf_einsum(&once, &error) == TF_CODE_SHAPE_MISMATCH) {
    printf("expected failure: %s\n", tf_error_message(error));
    tf_error_destroy(error);
  }

  tf_einsum_plan_destroy(plan);
  tf_runtime_destroy(rt);
  return 0;
}
