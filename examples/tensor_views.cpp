// The README's example, compiled and run as a test (`example_tensor_views`).
#include <cstdio>

#include <tenferro/tensor.h>

using namespace tenferro;

Result<double> trace_of_transpose() {
  TENFERRO_ASSIGN_OR_RETURN(Tensor a, Tensor::from_values<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}));
  TENFERRO_ASSIGN_OR_RETURN(Tensor at, a.transpose(0, 1));  // a view: no copy
  TENFERRO_ASSIGN_OR_RETURN(Tensor d, at.diagonal());       // still a view
  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> v, d.to_vector<double>());
  return v[0] + v[1] + v[2];  // 15
}

int main() {
  Result<double> trace = trace_of_transpose();
  if (!trace.ok() || *trace != 15.0) {
    std::fprintf(stderr, "unexpected result: %s\n", trace.ok() ? "wrong value" : trace.status().to_string().c_str());
    return 1;
  }
  Tensor a = *Tensor::zeros({3, 3}, DType::kFloat64);
  Status bad = a.reshape({4, 2}).status();
  Status copy = a.transpose(0, 1)->reshape({9}).status();
  if (bad.code() != ErrorCode::kShapeMismatch || copy.code() != ErrorCode::kLayoutRequiresCopy) return 1;
  std::printf("trace = %g\n%s\n%s\n", *trace, bad.to_string().c_str(), copy.to_string().c_str());
  return 0;
}
