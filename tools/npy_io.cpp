// .npy reading and writing (npy_io.h, Note [npy reading rules]).
#include "npy_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "tenferro/base/input_file.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::npy {
namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::string_view kSupported =
    "int32 '<i4', int64 '<i8', float32 '<f4', float64 '<f8', complex64 '<c8' or complex128 '<c16' (either byte "
    "order)";

Error invalid(std::string message) { return Error(ErrorCode::kInvalidArgument, ErrorStage::kNone, std::move(message)); }

// Printable form of up to 24 bytes of header text for error messages.
std::string excerpt(std::string_view text) {
  if (text.empty()) return "the end of the header";
  std::string out = "'";
  const std::size_t n = std::min<std::size_t>(text.size(), 24);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += n < text.size() ? "...'" : "'";
  return out;
}

std::string shape_tuple(std::span<const std::int64_t> shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i > 0 ? ", " : "", shape[i]);
  return s + ")";
}

struct DescrInfo {
  DType dtype;
  bool swap_bytes;
};

// numpy's type kind characters: a type string starting with one of these is
// a real numpy dtype this reader does not handle (kUnsupported), anything
// else is not a dtype at all (kInvalidArgument).
constexpr std::string_view kNumpyKinds = "?bBhHiIlLqQpPnNeEfdgFDGSUVOMmuca";

Result<DescrInfo> parse_type_string(std::string_view descr) {
  std::string_view rest = descr;
  char order = '=';
  if (!rest.empty() && std::string_view("<>|=").find(rest[0]) != std::string_view::npos) {
    order = rest[0];
    rest.remove_prefix(1);
  }
  const bool host_little = std::endian::native == std::endian::little;
  const bool swap = (order == '<' && !host_little) || (order == '>' && host_little);
  if (rest == "i4") return DescrInfo{DType::kInt32, swap};
  if (rest == "i8") return DescrInfo{DType::kInt64, swap};
  if (rest == "f4") return DescrInfo{DType::kFloat32, swap};
  if (rest == "f8") return DescrInfo{DType::kFloat64, swap};
  if (rest == "c8") return DescrInfo{DType::kComplex64, swap};
  if (rest == "c16") return DescrInfo{DType::kComplex128, swap};
  if (!rest.empty() && kNumpyKinds.find(rest[0]) != std::string_view::npos) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "descr '{}' is not supported; expected {}", descr,
                      kSupported);
  }
  return invalid(
      fmt::format("descr '{}' is not a numpy type string; expected a byte order and type such as '<f8'", descr));
}

// A recursive-descent parser for the one Python literal a .npy header holds:
// {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple of int>}.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Status parse(NpyHeader& header) {
    skip_space();
    if (!consume('{')) {
      return invalid(fmt::format("header: expected a Python dict literal starting with '{{', found {}", rest()));
    }
    std::optional<DescrInfo> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::int64_t>> shape;
    while (true) {
      skip_space();
      if (consume('}')) break;
      TENFERRO_ASSIGN_OR_RETURN(std::string_view key, parse_string("a quoted key or '}'"));
      skip_space();
      if (!consume(':')) return invalid(fmt::format("header: expected ':' after key '{}', found {}", key, rest()));
      skip_space();
      if (key == "descr") {
        if (descr) return duplicate(key);
        TENFERRO_ASSIGN_OR_RETURN(descr, parse_descr_value());
      } else if (key == "fortran_order") {
        if (fortran) return duplicate(key);
        TENFERRO_ASSIGN_OR_RETURN(fortran, parse_bool());
      } else if (key == "shape") {
        if (shape) return duplicate(key);
        TENFERRO_ASSIGN_OR_RETURN(shape, parse_shape());
      } else {
        return invalid(
            fmt::format("header: unexpected key '{}'; expected exactly 'descr', 'fortran_order' and 'shape'", key));
      }
      skip_space();
      if (consume(',')) continue;
      if (consume('}')) break;
      return invalid(fmt::format("header: expected ',' or '}}' after the value of '{}', found {}", key, rest()));
    }
    skip_space();
    if (pos_ != text_.size()) {
      return invalid(fmt::format("header: expected only spaces after the dict, found {}", rest()));
    }
    if (!descr) return missing("descr");
    if (!fortran) return missing("fortran_order");
    if (!shape) return missing("shape");
    header.dtype = descr->dtype;
    header.swap_bytes = descr->swap_bytes;
    header.fortran_order = *fortran;
    header.shape = std::move(*shape);
    return ok_status();
  }

 private:
  std::string excerpt_at(std::size_t pos) const { return excerpt(text_.substr(std::min(pos, text_.size()))); }
  std::string rest() const { return excerpt_at(pos_); }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool consume(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  static Error missing(std::string_view key) {
    return invalid(fmt::format("header: key '{}' is missing; expected 'descr', 'fortran_order' and 'shape'", key));
  }
  static Error duplicate(std::string_view key) {
    return invalid(fmt::format("header: key '{}' appears twice; expected it once", key));
  }

  // A Python string literal in single or double quotes, without escapes
  // (numpy's headers never contain any). Borrows from the header text.
  Result<std::string_view> parse_string(std::string_view what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return invalid(fmt::format("header: expected {}, found {}", what, rest()));
    const std::size_t start = ++pos_;
    while (!at_end() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') {
        return invalid(fmt::format("header: escape sequences in strings are not supported, found {}", rest()));
      }
      if (text_[pos_] == '\n') break;
      ++pos_;
    }
    if (at_end() || text_[pos_] != quote) {
      return invalid(fmt::format("header: unterminated string starting at {}", excerpt_at(start - 1)));
    }
    const std::string_view s = text_.substr(start, pos_ - start);
    ++pos_;
    return s;
  }

  Result<DescrInfo> parse_descr_value() {
    if (peek() == '[') {
      return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                        "descr: structured dtypes (a list of fields) are not supported; expected {}", kSupported);
    }
    TENFERRO_ASSIGN_OR_RETURN(std::string_view descr, parse_string("descr: a quoted type string such as '<f8'"));
    return parse_type_string(descr);
  }

  Result<bool> parse_bool() {
    const std::size_t start = pos_;
    while (!at_end() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    if (word == "True") return true;
    if (word == "False") return false;
    return invalid(fmt::format("fortran_order: expected True or False, found {}", excerpt_at(start)));
  }

  Result<std::vector<std::int64_t>> parse_shape() {
    const std::size_t start = pos_;
    if (!consume('(')) {
      return invalid(fmt::format("shape: expected a tuple of non-negative integers such as (2, 3), found {}", rest()));
    }
    std::vector<std::int64_t> shape;
    bool trailing_comma = false;
    while (true) {
      skip_space();
      if (consume(')')) break;
      const std::size_t item = pos_;
      if (peek() == '-' || peek() == '+') {
        const bool minus = peek() == '-';
        ++pos_;
        if (minus) return invalid(fmt::format("shape: expected a non-negative extent, found {}", excerpt_at(item)));
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        return invalid(fmt::format("shape: expected a non-negative integer, found {}", excerpt_at(item)));
      }
      std::int64_t value = 0;
      bool overflow = false;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        overflow = overflow || __builtin_mul_overflow(value, 10, &value) ||
                   __builtin_add_overflow(value, peek() - '0', &value);
        ++pos_;
      }
      if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long literal, as old numpy wrote
      if (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == '_') {
        return invalid(fmt::format("shape: expected an integer extent, found {}", excerpt_at(item)));
      }
      if (overflow) {
        return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "shape: extent {} does not fit in int64",
                          excerpt(text_.substr(item, pos_ - item)));
      }
      shape.push_back(value);
      if (shape.size() > kMaxNpyRank) {
        return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                          "shape: more than {} dimensions; expected at most {}", kMaxNpyRank, kMaxNpyRank);
      }
      skip_space();
      trailing_comma = consume(',');
      if (trailing_comma) continue;
      if (consume(')')) break;
      return invalid(fmt::format("shape: expected ',' or ')' after an extent, found {}", rest()));
    }
    if (shape.size() == 1 && !trailing_comma) {
      return invalid(fmt::format("shape: {} is an integer in parentheses, not a tuple; expected ({},)",
                                 excerpt(text_.substr(start, pos_ - start)), shape[0]));
    }
    return shape;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

std::size_t component_size(DType dtype) { return is_complex(dtype) ? dtype_size(dtype) / 2 : dtype_size(dtype); }

void swap_components(void* data, std::size_t nbytes, std::size_t width) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i + width <= nbytes; i += width) std::reverse(p + i, p + i + width);
}

Status check_data_size(const NpyHeader& h, std::size_t available) {
  const auto need = static_cast<std::size_t>(h.data_bytes);
  if (available < need) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "data is truncated: shape {} of {} needs {} bytes after the {}-byte header, found {}",
                      shape_tuple(h.shape), h.dtype, need, h.data_offset, available);
  }
  if (available > need) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "{} trailing bytes after the data: shape {} of {} needs exactly {} bytes, found {}",
                      available - need, shape_tuple(h.shape), h.dtype, need, available);
  }
  return ok_status();
}

Result<Tensor> empty_for(const NpyHeader& h) {
  return Tensor::empty(IntArrayRef(h.shape), h.dtype,
                       h.fortran_order ? MemoryOrder::kColMajor : MemoryOrder::kRowMajor);
}

Error with_path(const std::string& path, const Status& status) {
  return Error(status.code(), status.stage(), fmt::format("{}: {}", path, status.message()));
}

// Copies the elements of `src` (element strides) in row-major order to dst.
void gather_row_major(const char* src, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                      std::size_t elem, char*& dst) {
  if (shape.empty()) {
    std::memcpy(dst, src, elem);
    dst += elem;
    return;
  }
  const auto step = static_cast<std::ptrdiff_t>(strides[0]) * static_cast<std::ptrdiff_t>(elem);
  for (std::int64_t i = 0; i < shape[0]; ++i) {
    gather_row_major(src + i * step, shape.subspan(1), strides.subspan(1), elem, dst);
  }
}

Result<std::string> encode_header(const Tensor& tensor) {
  const DType d = tensor.dtype();
  const char* type = d == DType::kInt32        ? "i4"
                     : d == DType::kInt64      ? "i8"
                     : d == DType::kFloat32    ? "f4"
                     : d == DType::kFloat64    ? "f8"
                     : d == DType::kComplex64  ? "c8"
                     : d == DType::kComplex128 ? "c16"
                                               : nullptr;
  if (type == nullptr) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "cannot write a {} tensor as .npy; expected int32, int64, float32, float64, complex64 or "
                      "complex128",
                      d);
  }
  if (!tensor.is_host()) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                      "cannot write {} as .npy: expected host memory", tensor.to_string());
  }
  const char order = std::endian::native == std::endian::little ? '<' : '>';
  const std::string dict = fmt::format("{{'descr': '{}{}', 'fortran_order': False, 'shape': {}, }}", order, type,
                                       shape_tuple(tensor.shape()));
  for (int major : {1, 2}) {
    const std::size_t preamble = major == 1 ? 10 : 12;
    const std::size_t unpadded = preamble + dict.size() + 1;
    const std::size_t padded = (unpadded + 63) / 64 * 64;
    const std::size_t header_len = padded - preamble;
    if (major == 1 && header_len > 0xffff) continue;
    std::string out(reinterpret_cast<const char*>(kMagic), 6);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
    out += dict;
    out.append(padded - unpadded, ' ');
    out += '\n';
    return out;
  }
  return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "shape {} makes a header too long for .npy",
                    shape_tuple(tensor.shape()));
}

// The tensor's bytes in row-major order: the tensor itself when contiguous.
const char* row_major_bytes(const Tensor& tensor, std::vector<char>& scratch) {
  if (tensor.is_contiguous() || tensor.numel() == 0) return static_cast<const char*>(tensor.data());
  scratch.resize(tensor.nbytes());
  char* dst = scratch.data();
  gather_row_major(static_cast<const char*>(tensor.data()), tensor.shape(), tensor.strides(),
                   dtype_size(tensor.dtype()), dst);
  return scratch.data();
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

Result<std::size_t> npy_data_offset(const std::uint8_t* data, std::size_t size) {
  const std::size_t magic_bytes = std::min<std::size_t>(size, sizeof(kMagic));
  if (magic_bytes > 0 && std::memcmp(data, kMagic, magic_bytes) != 0) {
    std::string found;
    for (std::size_t i = 0; i < magic_bytes; ++i) found += fmt::format("{}{:02x}", i > 0 ? " " : "", data[i]);
    return invalid(
        fmt::format("not a .npy file: expected the magic bytes 93 4e 55 4d 50 59 (\\x93NUMPY), found {}", found));
  }
  if (size < 8) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "truncated .npy file: expected at least 10 bytes (magic, version, header length), found {}",
                      size);
  }
  const int major = data[6], minor = data[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      ".npy format version {}.{} is not supported; expected 1.0, 2.0 or 3.0", major, minor);
  }
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (size < 8 + length_bytes) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "truncated .npy file: version {}.0 expects {} bytes before the header, found {}", major,
                      8 + length_bytes, size);
  }
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < length_bytes; ++i) header_len |= std::size_t{data[8 + i]} << (8 * i);
  if (header_len > kMaxNpyHeaderBytes) {
    return invalid(fmt::format("header length {} exceeds the limit of {} bytes", header_len, kMaxNpyHeaderBytes));
  }
  return 8 + length_bytes + header_len;
}

Result<NpyHeader> parse_npy_header(const std::uint8_t* data, std::size_t size) {
  TENFERRO_ASSIGN_OR_RETURN(std::size_t offset, npy_data_offset(data, size));
  const std::size_t preamble = data[6] == 1 ? 10 : 12;
  if (offset > size) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "header length {} extends beyond the end of the file: expected {} bytes, found {}",
                      offset - preamble, offset, size);
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + preamble, offset - preamble);
  if (text.empty() || text.back() != '\n') {
    return invalid(fmt::format("header: expected it to end with a newline, found {}",
                               text.empty() ? std::string("an empty header") : excerpt(text.substr(text.size() - 1))));
  }
  NpyHeader h;
  h.major_version = data[6];
  h.minor_version = data[7];
  h.data_offset = offset;
  TENFERRO_TRY(HeaderParser(text).parse(h));
  // Bytes of the non-zero extents: bounded even when a zero extent makes the
  // array empty, so strides computed from the shape cannot overflow either.
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(h.dtype));
  bool empty = false;
  for (std::int64_t extent : h.shape) {
    if (extent == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(bytes, extent, &bytes)) {
      return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone,
                        "shape {} of {}: expected a byte count that fits in int64", shape_tuple(h.shape), h.dtype);
    }
  }
  h.data_bytes = empty ? 0 : bytes;
  return h;
}

Result<Tensor> decode_npy(const std::uint8_t* data, std::size_t size) {
  TENFERRO_ASSIGN_OR_RETURN(NpyHeader h, parse_npy_header(data, size));
  TENFERRO_TRY(check_data_size(h, size - h.data_offset));
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, empty_for(h));
  if (h.data_bytes > 0) {
    std::memcpy(t.data(), data + h.data_offset, static_cast<std::size_t>(h.data_bytes));
    if (h.swap_bytes) swap_components(t.data(), t.nbytes(), component_size(h.dtype));
  }
  return t;
}

Result<Tensor> read_npy(const std::string& path) {
  TENFERRO_ASSIGN_OR_RETURN(InputFile in, open_input_file(path, ".npy file"));
  std::FILE* const file = in.file.get();
  const auto size = static_cast<std::size_t>(in.size);

  std::vector<std::uint8_t> header(std::min<std::size_t>(size, 12));
  if (!header.empty() && std::fread(header.data(), 1, header.size(), file) != header.size()) {
    return file_error(path, "read it", errno);
  }
  Result<std::size_t> offset = npy_data_offset(header.data(), header.size());
  if (!offset.ok()) return with_path(path, offset.status());
  if (*offset > size) {
    return make_error(ErrorCode::kDataLoss, ErrorStage::kNone,
                      "{}: header length {} extends beyond the end of the file: expected {} bytes, found {}", path,
                      *offset - (header[6] == 1 ? 10 : 12), *offset, size);
  }
  const std::size_t read_before = header.size();
  header.resize(*offset);
  if (*offset > read_before &&
      std::fread(header.data() + read_before, 1, *offset - read_before, file) != *offset - read_before) {
    return file_error(path, "read it", errno);
  }
  Result<NpyHeader> h = parse_npy_header(header.data(), header.size());
  if (!h.ok()) return with_path(path, h.status());
  if (Status s = check_data_size(*h, size - h->data_offset); !s.ok()) return with_path(path, s);
  Result<Tensor> t = empty_for(*h);
  if (!t.ok()) return with_path(path, t.status());
  // The header may be shorter than the 12 bytes first read (version 1.0).
  if (std::fseek(file, static_cast<long>(h->data_offset), SEEK_SET) != 0) return file_error(path, "seek", errno);
  const auto n = static_cast<std::size_t>(h->data_bytes);
  if (n > 0) {
    if (std::fread(t->data(), 1, n, file) != n) {
      return make_error(ErrorCode::kDataLoss, ErrorStage::kNone, "{}: expected {} data bytes, could read fewer", path,
                        n);
    }
    if (h->swap_bytes) swap_components(t->data(), n, component_size(h->dtype));
  }
  return t;
}

Result<std::vector<std::uint8_t>> encode_npy(const Tensor& tensor) {
  TENFERRO_ASSIGN_OR_RETURN(std::string header, encode_header(tensor));
  std::vector<char> scratch;
  const char* data = row_major_bytes(tensor, scratch);
  std::vector<std::uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), data, data + tensor.nbytes());
  return out;
}

// Note [Writing output files]
// A regular file (new or existing) is written to a fresh name next to it
// and renamed into place once complete, so a failed or interrupted run never
// leaves a partial file and never changes an existing one; an existing
// file keeps its permission bits. A symbolic link is followed: the file it
// names is replaced that way, and the link stays. Anything else that exists
// at the path (a device such as /dev/null, a FIFO) is written through, as
// numpy.save does: the rename would replace the device node itself (the CLI
// audit of 2026-12-06 turned /dev/full into a regular file, as root).
Status write_npy(const std::string& path, const Tensor& tensor) {
  TENFERRO_ASSIGN_OR_RETURN(std::string header, encode_header(tensor));
  std::vector<char> scratch;
  const char* data = row_major_bytes(tensor, scratch);
  // Writes the file's bytes to `fd`, sets `mode` when given, closes it:
  // 0, or the first errno.
  const auto fill = [&](int fd, std::optional<mode_t> mode) {
    int err = 0;
    if (!write_all(fd, header.data(), header.size()) || !write_all(fd, data, tensor.nbytes())) {
      err = errno;
    } else if (mode.has_value() && ::fchmod(fd, *mode) != 0) {
      err = errno;
    }
    if (::close(fd) != 0 && err == 0) err = errno;
    return err;
  };
  std::string target = path;
  struct stat existing {};
  const bool exists = ::stat(path.c_str(), &existing) == 0;  // follows links
  if (exists && !S_ISREG(existing.st_mode)) {
    if (S_ISDIR(existing.st_mode)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "{}: expected a file name, found a directory (name the .npy file to write)", path);
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return file_error(path, "open it for writing", errno);
    const int err = fill(fd, std::nullopt);
    return err == 0 ? ok_status() : Status(file_error(path, "write it", err));
  }
  // The file a link names (which may not exist yet) is replaced, not the
  // link: follow the chain, as open() would (at most 40 links, as Linux).
  for (int hops = 0;; ++hops) {
    struct stat link {};
    if (::lstat(target.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) break;
    if (hops == 40) return file_error(path, "follow its symbolic links", ELOOP);
    std::error_code ec;
    const std::filesystem::path next = std::filesystem::read_symlink(target, ec);
    if (ec) return file_error(path, "read its symbolic link", ec.value());
    target = (next.is_absolute() ? next : std::filesystem::path(target).parent_path() / next).string();
  }
  // A fresh name next to the target, so the rename stays on one file system.
  std::random_device entropy;
  const std::string temp = fmt::format("{}.tmp-{}-{:08x}", target, ::getpid(), entropy());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return file_error(path, "create a file next to it", errno);
  if (const int err = fill(fd, exists ? std::optional<mode_t>(existing.st_mode & 07777) : std::nullopt); err != 0) {
    ::unlink(temp.c_str());
    return file_error(path, "write it", err);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return file_error(path, "rename the written file to it", err);
  }
  return ok_status();
}

}  // namespace tenferro::npy
