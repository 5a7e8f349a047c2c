#include "npy_io.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <complex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace tenferro::npy {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// The value both this test and the numpy scripts put at row-major index i:
// exactly representable in float32, distinct per element and per part.
double real_part(std::int64_t i) { return static_cast<double>(i % 7) - 3.0 + 0.25 * static_cast<double>(i); }
double imag_part(std::int64_t i) { return 0.5 * static_cast<double>(i) - 1.0; }

constexpr DType kDTypes[] = {DType::kInt32,   DType::kInt64,     DType::kFloat32,
                             DType::kFloat64, DType::kComplex64, DType::kComplex128};

// Integers hold 4 x real_part (whole numbers).
double pattern_value(std::int64_t i, DType dtype) { return is_integer(dtype) ? 4.0 * real_part(i) : real_part(i); }

Tensor patterned(std::vector<std::int64_t> shape, DType dtype) {
  Tensor t = *Tensor::empty(IntArrayRef(shape), dtype);
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
      auto* p = static_cast<T*>(t.data());
      for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(pattern_value(i, dtype));
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      using R = typename T::value_type;
      auto* p = static_cast<T*>(t.data());
      for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = T(static_cast<R>(real_part(i)), static_cast<R>(imag_part(i)));
    }
  });
  return t;
}

// Element `flat` (row-major index) of `t`, read through its strides.
template <class T>
T element(const Tensor& t, std::int64_t flat) {
  std::int64_t offset = 0;
  for (std::int64_t d = t.rank() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.strides()[static_cast<std::size_t>(d)];
    flat /= t.size(d);
  }
  return static_cast<const T*>(t.data())[offset];
}

// Elements in row-major order as complex<double> (imaginary 0 for reals).
std::vector<std::complex<double>> values_of(const Tensor& t) {
  std::vector<std::complex<double>> out;
  visit_dtype(t.dtype(), [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
      for (std::int64_t i = 0; i < t.numel(); ++i) out.emplace_back(static_cast<double>(element<T>(t, i)), 0.0);
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      for (std::int64_t i = 0; i < t.numel(); ++i) out.emplace_back(std::complex<double>(element<T>(t, i)));
    }
  });
  return out;
}

void expect_patterned(const Tensor& t, std::vector<std::int64_t> shape, DType dtype) {
  ASSERT_EQ(t.dtype(), dtype);
  ASSERT_EQ(std::vector<std::int64_t>(t.shape().begin(), t.shape().end()), shape);
  const auto v = values_of(t);
  ASSERT_EQ(static_cast<std::int64_t>(v.size()), t.numel());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto k = static_cast<std::int64_t>(i);
    EXPECT_EQ(v[i].real(), pattern_value(k, dtype)) << "element " << i;
    EXPECT_EQ(v[i].imag(), is_complex(dtype) ? imag_part(k) : 0.0) << "element " << i;
  }
}

// A .npy image with `header` as its header text (padding and newline added
// unless `raw`), version `major`, followed by `data`.
Bytes image(const std::string& header, const Bytes& data = {}, int major = 1, bool raw = false) {
  std::string text = header;
  const std::size_t preamble = major == 1 ? 10 : 12;
  if (!raw) {
    const std::size_t unpadded = preamble + text.size() + 1;
    text.append((64 - unpadded % 64) % 64, ' ');
    text += '\n';
  }
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  for (std::size_t i = 0; i < preamble - 8; ++i)
    out.push_back(static_cast<std::uint8_t>((text.size() >> (8 * i)) & 0xff));
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes zeros(std::size_t n) { return Bytes(n, 0); }

std::string header_for(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr, fortran, shape);
}

Result<Tensor> decode(const Bytes& b) { return decode_npy(b.data(), b.size()); }

// Expects `b` to fail with `code` and a message containing `needle`.
void expect_error(const Bytes& b, ErrorCode code, const std::string& needle) {
  Result<Tensor> r = decode(b);
  ASSERT_FALSE(r.ok()) << "expected " << to_string(code) << " for a message with '" << needle << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(std::string(r.status().message()).find(needle), std::string::npos) << r.status().to_string();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tenferro_npy_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<long>(b.size()));
}

const std::vector<std::vector<std::int64_t>> kShapes = {{}, {0}, {5}, {2, 3}, {2, 0, 4}, {3, 1, 2, 2}};

TEST(NpyIoTest, EncodeDecodeRoundTripsEveryDtypeAndShape) {
  for (DType dtype : kDTypes) {
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(fmt::format("{} {}", dtype, shape.size()));
      const Tensor t = patterned(shape, dtype);
      Result<Bytes> bytes = encode_npy(t);
      ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
      Result<NpyHeader> h = parse_npy_header(bytes->data(), bytes->size());
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      EXPECT_EQ(h->data_offset % 64, 0u);  // numpy's alignment
      EXPECT_EQ(h->major_version, 1);
      EXPECT_FALSE(h->fortran_order);
      EXPECT_EQ(h->data_bytes, static_cast<std::int64_t>(t.nbytes()));
      EXPECT_EQ(bytes->size(), h->data_offset + t.nbytes());
      Result<Tensor> back = decode(*bytes);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      expect_patterned(*back, shape, dtype);
    }
  }
}

TEST(NpyIoTest, WriteAndReadFilesRoundTrip) {
  TempDir dir;
  for (DType dtype : kDTypes) {
    const std::string path = dir.file(fmt::format("{}.npy", dtype));
    ASSERT_TRUE(write_npy(path, patterned({4, 3}, dtype)).ok());
    Result<Tensor> back = read_npy(path);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    expect_patterned(*back, {4, 3}, dtype);
  }
  // Only the written files remain: no temporary left next to them.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), std::ssize(kDTypes));
}

TEST(NpyIoTest, WritesStridedTensorsInRowMajorOrder) {
  const Tensor t = patterned({2, 3}, DType::kFloat64);
  const Tensor tt = *t.transpose(0, 1);  // [3, 2] view, not contiguous
  Result<Tensor> back = decode(*encode_npy(tt));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->is_contiguous());
  EXPECT_EQ(*back->to_vector<double>(), *tt.to_vector<double>());
}

TEST(NpyIoTest, FortranOrderGivesAColumnMajorView) {
  // Column-major data of [[0, 1, 2], [3, 4, 5]]: 0 3 1 4 2 5.
  Bytes data;
  for (double v : {0.0, 3.0, 1.0, 4.0, 2.0, 5.0}) {
    const std::size_t n = data.size();
    data.resize(n + sizeof(v));
    std::memcpy(data.data() + n, &v, sizeof(v));
  }
  Result<Tensor> t = decode(image(header_for("<f8", "(2, 3)", "True"), data));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_TRUE(t->is_col_major_contiguous());
  EXPECT_FALSE(t->is_contiguous());
  EXPECT_EQ(*t->to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(NpyIoTest, BigEndianFilesAreSwappedOnRead) {
  auto big = [](auto v) {
    Bytes b(sizeof(v));
    std::memcpy(b.data(), &v, sizeof(v));
    if (std::endian::native == std::endian::little) std::reverse(b.begin(), b.end());
    return b;
  };
  Bytes f8 = big(1.5);
  const Bytes second = big(-2.25);
  f8.insert(f8.end(), second.begin(), second.end());
  Result<Tensor> t = decode(image(header_for(">f8", "(2,)"), f8));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(*t->to_vector<double>(), (std::vector<double>{1.5, -2.25}));

  Bytes c8 = big(0.5f);  // each part swapped on its own
  const Bytes im = big(-4.0f);
  c8.insert(c8.end(), im.begin(), im.end());
  Result<Tensor> c = decode(image(header_for(">c8", "()"), c8));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->to_vector<std::complex<float>>()->at(0), std::complex<float>(0.5f, -4.0f));
}

TEST(NpyIoTest, AcceptsVersions2And3AndLiberalSpacing) {
  for (int major : {2, 3}) {
    Result<Tensor> t = decode(image(header_for("<f4", "(1,)"), zeros(4), major));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), DType::kFloat32);
  }
  // Double quotes, no trailing comma, keys in another order, Python 2 longs.
  Result<Tensor> t =
      decode(image("{ \"shape\" : ( 2L ,3 ) , \"fortran_order\":False,\"descr\":\"<c16\"}", zeros(6 * 16)));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DType::kComplex128);
  EXPECT_EQ(t->numel(), 6);
}

TEST(NpyIoTest, PreambleErrors) {
  Bytes valid = image(header_for("<f8", "(1,)"), zeros(8));
  Bytes bad_magic = valid;
  bad_magic[3] = 'X';
  expect_error(bad_magic, ErrorCode::kInvalidArgument, "magic");
  expect_error(Bytes{'P', 'K', 3, 4}, ErrorCode::kInvalidArgument, "not a .npy file");
  expect_error(Bytes(valid.begin(), valid.begin() + 4), ErrorCode::kDataLoss, "truncated");
  expect_error(Bytes(valid.begin(), valid.begin() + 9), ErrorCode::kDataLoss, "truncated");
  expect_error(Bytes{}, ErrorCode::kDataLoss, "truncated");
  Bytes v4 = valid;
  v4[6] = 4;
  expect_error(v4, ErrorCode::kUnsupported, "version 4.0");
  Bytes v11 = valid;
  v11[7] = 1;
  expect_error(v11, ErrorCode::kUnsupported, "version 1.1");
  // Header length 2^24 in a version 2.0 file: beyond the limit.
  expect_error(Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0, 1}, ErrorCode::kInvalidArgument, "limit");
  // A header length larger than the bytes present.
  Bytes short_header = valid;
  short_header.resize(40);
  expect_error(short_header, ErrorCode::kDataLoss, "beyond the end");
}

TEST(NpyIoTest, HeaderTextErrors) {
  expect_error(image(header_for("<f8", "(1,)"), {}, 1, true), ErrorCode::kInvalidArgument, "newline");
  expect_error(image("", {}, 1, true), ErrorCode::kInvalidArgument, "newline");
  expect_error(image("['descr', '<f8']"), ErrorCode::kInvalidArgument, "dict");
  expect_error(image("{'descr': '<f8', 'fortran_order': False}"), ErrorCode::kInvalidArgument, "'shape' is missing");
  expect_error(image("{'shape': (), 'fortran_order': False}"), ErrorCode::kInvalidArgument, "'descr' is missing");
  expect_error(image("{'descr': '<f8', 'shape': ()}"), ErrorCode::kInvalidArgument, "'fortran_order' is missing");
  expect_error(image("{'descr': '<f8', 'fortran_order': False, 'shape': (), 'extra': 1}"), ErrorCode::kInvalidArgument,
               "unexpected key 'extra'");
  expect_error(image("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': ()}"),
               ErrorCode::kInvalidArgument, "twice");
  expect_error(image("{'descr': '<f8' 'fortran_order': False, 'shape': ()}"), ErrorCode::kInvalidArgument,
               "expected ',' or '}'");
  expect_error(image("{'descr': '<f8', 'fortran_order': False, 'shape': ()} x"), ErrorCode::kInvalidArgument,
               "after the dict");
  expect_error(image("{'descr: '<f8'}"), ErrorCode::kInvalidArgument, "expected ':'");
  expect_error(image("{'descr': '<f8"), ErrorCode::kInvalidArgument, "unterminated");
  expect_error(image("{'de\\x73cr': '<f8'}"), ErrorCode::kInvalidArgument, "escape");
  expect_error(image("{descr: '<f8'}"), ErrorCode::kInvalidArgument, "quoted key");
  expect_error(image(header_for("<f8", "()", "1")), ErrorCode::kInvalidArgument, "True or False");
  expect_error(image(header_for("<f8", "()", "true")), ErrorCode::kInvalidArgument, "True or False");
}

TEST(NpyIoTest, DescrErrors) {
  expect_error(image(header_for("xyz", "()")), ErrorCode::kInvalidArgument, "not a numpy type string");
  expect_error(image(header_for("", "()")), ErrorCode::kInvalidArgument, "not a numpy type string");
  expect_error(image("{'descr': 8, 'fortran_order': False, 'shape': ()}"), ErrorCode::kInvalidArgument,
               "quoted type string");
  for (const char* unsupported : {"<i2", "|i1", "|O", "|b1", "<f2", "<u4", "<u8", "<M8[ns]", "<U5", "<c32", "|V16"}) {
    SCOPED_TRACE(unsupported);
    expect_error(image(header_for(unsupported, "()")), ErrorCode::kUnsupported, "not supported");
  }
  expect_error(image("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': ()}"), ErrorCode::kUnsupported,
               "structured");
}

TEST(NpyIoTest, ShapeErrors) {
  expect_error(image(header_for("<f8", "(-1,)")), ErrorCode::kInvalidArgument, "non-negative");
  expect_error(image(header_for("<f8", "(2.5,)")), ErrorCode::kInvalidArgument, "integer extent");
  expect_error(image(header_for("<f8", "(1e3,)")), ErrorCode::kInvalidArgument, "integer extent");
  expect_error(image(header_for("<f8", "(None,)")), ErrorCode::kInvalidArgument, "non-negative integer");
  expect_error(image(header_for("<f8", "(3)")), ErrorCode::kInvalidArgument, "not a tuple");
  expect_error(image(header_for("<f8", "[3]")), ErrorCode::kInvalidArgument, "tuple");
  expect_error(image(header_for("<f8", "(2 3)")), ErrorCode::kInvalidArgument, "',' or ')'");
  expect_error(image(header_for("<f8", "(99999999999999999999,)")), ErrorCode::kSizeOverflow, "int64");
  expect_error(image(header_for("<f8", "(4294967296, 4294967296)")), ErrorCode::kSizeOverflow, "int64");
  // A zero extent does not excuse the others: their strides must fit too.
  expect_error(image(header_for("<f8", "(0, 4611686018427387904, 4)")), ErrorCode::kSizeOverflow, "int64");
  std::string rank65 = "(";
  for (int i = 0; i < 65; ++i) rank65 += "1, ";
  expect_error(image(header_for("<f8", rank65 + ")")), ErrorCode::kUnsupported, "dimensions");
}

TEST(NpyIoTest, DataSizeMustMatchTheShape) {
  expect_error(image(header_for("<f8", "(2, 3)"), zeros(47)), ErrorCode::kDataLoss, "truncated");
  expect_error(image(header_for("<c8", "()"), zeros(0)), ErrorCode::kDataLoss, "truncated");
  expect_error(image(header_for("<f4", "(2,)"), zeros(9)), ErrorCode::kDataLoss, "trailing");
  expect_error(image(header_for("<f4", "(0, 5)"), zeros(4)), ErrorCode::kDataLoss, "trailing");
  EXPECT_TRUE(decode(image(header_for("<f4", "(0, 5)"))).ok());
}

TEST(NpyIoTest, EveryPrefixAndRandomCorruptionIsATypedErrorOrATensor) {
  const Bytes valid = *encode_npy(patterned({3, 2}, DType::kComplex64));
  for (std::size_t n = 0; n < valid.size(); ++n) {
    Result<Tensor> r = decode_npy(valid.data(), n);  // a prefix: always too short
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss) << n << ": " << r.status().to_string();
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    Bytes b = valid;
    const int flips = 1 + static_cast<int>(rng() % 3);
    // Mostly the header: the data bytes are any bit pattern anyway.
    for (int f = 0; f < flips; ++f) b[rng() % (trial % 4 == 0 ? b.size() : 64)] = static_cast<std::uint8_t>(rng());
    Result<Tensor> r = decode(b);
    if (r.ok()) {
      EXPECT_EQ(r->nbytes(), b.size() - parse_npy_header(b.data(), b.size())->data_offset);
    } else {
      EXPECT_NE(r.status().code(), ErrorCode::kInternal) << r.status().to_string();
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

TEST(NpyIoTest, FileErrorsNameThePath) {
  TempDir dir;
  Result<Tensor> missing = read_npy(dir.file("absent.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find("absent.npy"), std::string::npos);

  Result<Tensor> directory = read_npy(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), ErrorCode::kInvalidArgument);
  // A FIFO without a writer is refused, not waited on.
  ASSERT_EQ(::mkfifo(dir.file("fifo.npy").c_str(), 0600), 0);
  Result<Tensor> fifo = read_npy(dir.file("fifo.npy"));
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(fifo.status().message()).find("fifo.npy: expected a regular .npy file, found a FIFO"),
            std::string::npos)
      << fifo.status().message();

  Bytes valid = image(header_for("<f8", "(2,)"), zeros(16));
  write_file(dir.file("header_cut.npy"), Bytes(valid.begin(), valid.begin() + 30));
  Result<Tensor> cut = read_npy(dir.file("header_cut.npy"));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(std::string(cut.status().message()).find("header_cut.npy: header length"), std::string::npos);

  write_file(dir.file("data_cut.npy"), Bytes(valid.begin(), valid.end() - 1));
  Result<Tensor> data_cut = read_npy(dir.file("data_cut.npy"));
  ASSERT_FALSE(data_cut.ok());
  EXPECT_EQ(data_cut.status().code(), ErrorCode::kDataLoss);

  write_file(dir.file("tiny.npy"), Bytes{0x93, 'N'});
  EXPECT_EQ(read_npy(dir.file("tiny.npy")).status().code(), ErrorCode::kDataLoss);

  write_file(dir.file("scalar.npy"), image(header_for("<f8", "()"), zeros(8)));
  EXPECT_TRUE(read_npy(dir.file("scalar.npy")).ok());
}

TEST(NpyIoTest, FailedWritesLeaveNoFile) {
  TempDir dir;
  const Status no_dir = write_npy(dir.file("absent/out.npy"), patterned({2}, DType::kFloat64));
  EXPECT_EQ(no_dir.code(), ErrorCode::kNotFound);
  const Status bools = write_npy(dir.file("bools.npy"), *Tensor::zeros({2}, DType::kBool));
  EXPECT_EQ(bools.code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(fs::exists(dir.file("bools.npy")));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// Note [Writing output files]: a symbolic link's target is replaced and the
// link kept; an existing file keeps its permission bits; a FIFO (as a
// device would be) is written through and stays a FIFO.
TEST(NpyIoTest, WritesFollowLinksKeepModesAndWriteThroughSpecialFiles) {
  TempDir dir;
  const Tensor t = patterned({3, 2}, DType::kFloat64);
  const Result<std::vector<std::uint8_t>> bytes = encode_npy(t);
  ASSERT_TRUE(bytes.ok());

  write_file(dir.file("target.npy"), Bytes{1, 2, 3});
  fs::create_symlink(dir.file("target.npy"), dir.file("link.npy"));
  ASSERT_TRUE(write_npy(dir.file("link.npy"), t).ok());
  EXPECT_TRUE(fs::is_symlink(dir.file("link.npy")));
  EXPECT_EQ(fs::file_size(dir.file("target.npy")), bytes->size());
  fs::create_symlink(dir.file("new_target.npy"), dir.file("dangling.npy"));  // names a file not made yet
  ASSERT_TRUE(write_npy(dir.file("dangling.npy"), t).ok());
  EXPECT_TRUE(fs::is_symlink(dir.file("dangling.npy")));
  EXPECT_EQ(fs::file_size(dir.file("new_target.npy")), bytes->size());

  write_file(dir.file("private.npy"), Bytes{1});
  fs::permissions(dir.file("private.npy"), fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(write_npy(dir.file("private.npy"), t).ok());
  EXPECT_EQ(fs::status(dir.file("private.npy")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  const std::string fifo = dir.file("pipe.npy");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::uint8_t> received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const Status through = write_npy(fifo, t);
  reader.join();
  ASSERT_TRUE(through.ok()) << through.to_string();
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(received, *bytes);
  EXPECT_EQ(write_npy(dir.path(), t).code(), ErrorCode::kInvalidArgument);  // a directory: refused, untouched
  EXPECT_TRUE(fs::is_directory(dir.path()));
}

// numpy (TENFERRO_REFERENCE_PYTHON) writes files of every kind this reader
// accepts, and reads back the files written here.
TEST(NpyIoTest, InteroperatesWithNumpy) {
  const std::string python = TENFERRO_REFERENCE_PYTHON;
  if (python.empty() || std::system(fmt::format("{} -c 'import numpy' 2>/dev/null", python).c_str()) != 0) {
    GTEST_SKIP() << "no python3 with numpy";
  }
  TempDir dir;
  const std::string script = dir.file("gen.py");
  std::ofstream(script) << R"(import sys, numpy as np
from numpy.lib import format as fmt
d = sys.argv[2]
def pattern(shape, dtype):
    n = int(np.prod(shape)) if len(shape) else 1
    i = np.arange(n, dtype=np.float64)
    v = (i % 7) - 3 + 0.25 * i
    if np.dtype(dtype).kind == 'i':
        v = 4 * v
    if np.dtype(dtype).kind == 'c':
        v = v + 1j * (0.5 * i - 1)
    return v.astype(dtype).reshape(shape)
cases = {'i4': '<i4', 'i8': '<i8', 'f4': '<f4', 'f8': '<f8', 'c8': '<c8', 'c16': '<c16', 'bi4': '>i4', 'bf8': '>f8',
         'bc16': '>c16'}
if sys.argv[1] == 'write':
    for name, dt in cases.items():
        np.save(f'{d}/{name}.npy', pattern((3, 4), dt))
    np.save(f'{d}/fortran.npy', np.asfortranarray(pattern((3, 4), '<f8')))
    np.save(f'{d}/scalar.npy', pattern((), '<c8'))
    np.save(f'{d}/empty.npy', pattern((2, 0, 3), '<f4'))
    for v in (2, 3):
        with open(f'{d}/v{v}.npy', 'wb') as f:
            fmt.write_array(f, pattern((3, 4), '<f8'), version=(v, 0))
else:
    for name, dt in cases.items():
        a = np.load(f'{d}/out_{name}.npy')
        assert a.dtype == np.dtype(dt).newbyteorder('='), (name, a.dtype)
        assert a.shape == (3, 4) and np.array_equal(a, pattern((3, 4), dt)), name
)";
  ASSERT_EQ(std::system(fmt::format("{} {} write {}", python, script, dir.path()).c_str()), 0);
  const std::pair<const char*, DType> files[] = {
      {"i4", DType::kInt32},        {"i8", DType::kInt64},       {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
      {"c8", DType::kComplex64},    {"c16", DType::kComplex128}, {"bi4", DType::kInt32},  {"bf8", DType::kFloat64},
      {"bc16", DType::kComplex128}, {"v2", DType::kFloat64},     {"v3", DType::kFloat64}};
  for (const auto& [name, dtype] : files) {
    SCOPED_TRACE(name);
    Result<Tensor> t = read_npy(dir.file(fmt::format("{}.npy", name)));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    expect_patterned(*t, {3, 4}, dtype);
    ASSERT_TRUE(write_npy(dir.file(fmt::format("out_{}.npy", name)), *t).ok());
  }
  Result<Tensor> fortran = read_npy(dir.file("fortran.npy"));
  ASSERT_TRUE(fortran.ok()) << fortran.status().to_string();
  EXPECT_TRUE(fortran->is_col_major_contiguous());
  expect_patterned(*fortran, {3, 4}, DType::kFloat64);
  Result<Tensor> scalar = read_npy(dir.file("scalar.npy"));
  ASSERT_TRUE(scalar.ok()) << scalar.status().to_string();
  expect_patterned(*scalar, {}, DType::kComplex64);
  Result<Tensor> empty = read_npy(dir.file("empty.npy"));
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  expect_patterned(*empty, {2, 0, 3}, DType::kFloat32);
  EXPECT_EQ(std::system(fmt::format("{} {} check {}", python, script, dir.path()).c_str()), 0);
}

}  // namespace
}  // namespace tenferro::npy
