// The C header from C++ under strict warnings (-Wold-style-cast,
// -Wzero-as-null-pointer-constant: the C ABI audit of 2026-12-07 found its
// size macros rejected by them). Compiling is the check; the run checks the
// macros agree with the structs' sizes.
#include "tenferro/c/tenferro.h"

static_assert(TF_EINSUM_ARGS_SIZE_V1 <= sizeof(tf_einsum_args), "an older version is no larger");
static_assert(TF_RUNTIME_OPTIONS_SIZE_V2 <= sizeof(tf_runtime_options), "an older version is no larger");

int main() {
  tf_version v{};
  v.struct_size = TF_VERSION_SIZE_V1;
  return tf_get_version(&v, nullptr) == TF_CODE_OK && v.api_major == TF_API_VERSION_MAJOR ? 0 : 1;
}
