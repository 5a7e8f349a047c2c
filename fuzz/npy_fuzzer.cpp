// Fuzzes the .npy reader (parse_npy_header, decode_npy): malformed images
// must come back as typed errors; an accepted image must decode to a tensor
// whose shape and size match its header, and re-encoding it must decode to
// the same shape and dtype.
#include <cstdint>
#include <string_view>

#include "fuzz_input.h"
#include "npy_io.h"

using tenferro::fuzz::property_violated;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tenferro::Result<tenferro::npy::NpyHeader> header = tenferro::npy::parse_npy_header(data, size);
  tenferro::Result<tenferro::Tensor> tensor = tenferro::npy::decode_npy(data, size);
  if (!tensor.ok()) return 0;
  if (!header.ok()) property_violated("decoded an image whose header does not parse", "");
  if (tenferro::IntArrayRef(header->shape) != tenferro::IntArrayRef(tensor->shape()))
    property_violated("decoded shape differs from the header", "");
  if (static_cast<std::int64_t>(tensor->nbytes()) != header->data_bytes)
    property_violated("decoded size differs from the header", "");
  tenferro::Result<std::vector<std::uint8_t>> encoded = tenferro::npy::encode_npy(*tensor);
  if (!encoded.ok()) property_violated("cannot re-encode a decoded tensor", encoded.status().to_string());
  tenferro::Result<tenferro::Tensor> again = tenferro::npy::decode_npy(encoded->data(), encoded->size());
  if (!again.ok() || tenferro::IntArrayRef(again->shape()) != tenferro::IntArrayRef(tensor->shape()) ||
      again->dtype() != tensor->dtype())
    property_violated("re-encoded tensor decodes differently", "");
  return 0;
}
