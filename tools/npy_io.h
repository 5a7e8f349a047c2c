// Reading and writing numpy .npy files (format versions 1.0, 2.0 and 3.0)
// for the int32, int64, float32, float64, complex64 and complex128 element
// types.
//
// Note [npy reading rules]
// - The header is parsed by a small Python-literal parser (no eval): a dict
//   with exactly the keys 'descr', 'fortran_order' and 'shape', as numpy
//   requires; it must end with '\n' and be at most kMaxNpyHeaderBytes long.
// - descr: '<i4', '<i8', '<f4', '<f8', '<c8', '<c16' and the same with '>'
//   (big-endian: bytes are swapped on read, so the Tensor is always native),
//   '=' or '|' (native). Any other numpy type string (bool, int8, int16,
//   unsigned, float16, object, strings, structured lists) is kUnsupported;
//   text that is not a numpy type string is kInvalidArgument.
// - shape: a tuple of non-negative integers ('()' is a scalar, zero extents
//   are allowed), at most kMaxNpyRank entries; the byte count of the
//   non-zero extents must fit in int64 (kSizeOverflow).
// - fortran_order True gives a column-major Tensor (strides of Fortran
//   order) holding the file's bytes as they are: no transpose, no copy.
// - The data must be exactly shape x itemsize bytes: shorter data and
//   trailing bytes are both kDataLoss (numpy ignores trailing bytes; a file
//   whose size disagrees with its header is more likely damaged).
// Errors: kInvalidArgument for malformed headers (the message names what was
// expected and what was found), kUnsupported for a version or dtype this
// reader does not handle, kDataLoss when the bytes end before the header or
// data do (or trailing bytes remain), kSizeOverflow for absurd shapes,
// kNotFound / kPermissionDenied when a file cannot be opened (the system's
// reason in the message), kInvalidArgument for a path that is not a regular
// file (a directory, FIFO or device: refused before reading, input_file.h).
//
// Writing always produces a row-major (fortran_order False), native-endian
// version 1.0 file (2.0 when the header needs more than 65535 bytes), its
// header padded to 64 bytes like numpy's. write_npy writes a regular file
// (or the file a symbolic link names) to a temporary file in the same
// directory and renames it into place, keeping an existing file's mode, so
// a failed write never leaves a partial file under the target name; a
// device or FIFO is written through (Note [Writing output files]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::npy {

/// Upper bound on the header length field (numpy's own reader limits
/// headers to 10000 bytes unless told otherwise).
inline constexpr std::size_t kMaxNpyHeaderBytes = std::size_t{1} << 20;
/// numpy's NPY_MAXDIMS.
inline constexpr std::size_t kMaxNpyRank = 64;

/// What a .npy header says.
struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  DType dtype = DType::kFloat64;
  /// The file's byte order is not the host's: elements must be swapped.
  bool swap_bytes = false;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  /// Bytes before the data (magic, version, length field and header text).
  std::size_t data_offset = 0;
  /// numel(shape) * itemsize.
  std::int64_t data_bytes = 0;
};

/// The number of bytes before the data (magic, version, length field and
/// header text), read from the first bytes of `data`: needs 10 bytes
/// (version 1.0) or 12 (2.0, 3.0). Errors as in Note [npy reading rules];
/// the header text itself is not checked. Does not retain `data`.
Result<std::size_t> npy_data_offset(const std::uint8_t* data, std::size_t size);

/// Parses the header at the start of `data`, which must hold at least the
/// whole header (npy_data_offset bytes); bytes after it are ignored. Never
/// reads outside [data, data + size); the entry point for fuzzing the
/// header parser. Does not retain `data`.
Result<NpyHeader> parse_npy_header(const std::uint8_t* data, std::size_t size);

/// Decodes a whole .npy image held in memory into a new Tensor (a copy).
/// Errors as in Note [npy reading rules]. Fuzzing entry point for the
/// complete reader.
Result<Tensor> decode_npy(const std::uint8_t* data, std::size_t size);

/// Reads the .npy file at `path`. Error messages start with the path.
Result<Tensor> read_npy(const std::string& path);

/// The .npy image of `tensor` (any layout; written row-major). kUnsupported
/// for dtypes other than float32, float64, complex64 and complex128,
/// kFailedPrecondition for non-host tensors.
Result<std::vector<std::uint8_t>> encode_npy(const Tensor& tensor);

/// Writes `tensor` to `path` as encode_npy does, through a temporary file
/// renamed into place. Errors as encode_npy, plus kNotFound /
/// kPermissionDenied / kResourceExhausted / kUnavailable from the file
/// system; on error no file named `path` is created or changed.
Status write_npy(const std::string& path, const Tensor& tensor);

}  // namespace tenferro::npy
