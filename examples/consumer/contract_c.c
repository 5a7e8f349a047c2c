/* The C ABI through the installed package's tenferro::c: the determinant of
 * [[1, 2], [4, 2]] by tf_linalg, printed as "c det -6". */
#include <stdio.h>
#include <string.h>

#include "tenferro/c/tenferro.h"

int main(void) {
  double a[4] = {1, 2, 4, 2}, det = 0.0;
  int64_t shape[2] = {2, 2};
  tf_tensor ta, td;
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* out[1] = {&td};
  tf_linalg_args args;
  tf_runtime* rt = NULL;
  tf_error* error = NULL;
  if (tf_runtime_create(NULL, &rt, &error) != TF_CODE_OK) {
    fprintf(stderr, "%s\n", tf_error_message(error));
    return 1;
  }
  memset(&ta, 0, sizeof ta);
  ta.struct_size = sizeof ta;
  ta.data = a;
  ta.shape = shape;
  ta.ndim = 2;
  ta.dtype = TF_DTYPE_F64;
  td = ta;
  td.data = &det;
  td.ndim = 0;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.runtime = rt;
  args.op = TF_LINALG_DET;
  args.inputs = in;
  args.num_inputs = 1;
  args.outputs = out;
  args.num_outputs = 1;
  if (tf_linalg(&args, &error) != TF_CODE_OK) {
    fprintf(stderr, "%s\n", tf_error_message(error));
    tf_error_destroy(error);
    tf_runtime_destroy(rt);
    return 1;
  }
  printf("c det %g\n", det);
  tf_runtime_destroy(rt);
  return 0;
}
