// Reading einsum benchmark instance files (benchmark_instance.h) with
// nlohmann-json in its non-throwing mode: malformed input becomes a typed
// error, never an exception.
#include "tenferro/einsum/benchmark_instance.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "tenferro/base/input_file.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/subscripts.h"

namespace tenferro::einsum {

namespace {

using Json = nlohmann::json;

Status malformed(std::string_view field, std::string_view expected) {
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "einsum instance: field \"{}\" is missing or malformed; expected {}", field, expected);
}

// The parser's message for text that is not JSON ("... parse error at line
// 1, column 54: syntax error while parsing array - unexpected end of input;
// expected ']'"): a SAX pass that keeps the error instead of throwing it.
struct FirstError final : nlohmann::json_sax<Json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    return false;
  }
};

// An instance file larger than this is refused before it is read (the
// largest shipped instance is a few hundred KiB).
constexpr std::uint64_t kMaxInstanceFileBytes = std::uint64_t{1} << 30;

// One extent: an integer that fits in int64 (a larger one is
// kSizeOverflow, as in a .npy header, not wrapped to a negative number).
Result<std::int64_t> parse_extent(const Json& extent) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const bool too_big = (extent.is_number_unsigned() && extent.get<std::uint64_t>() > kMax) ||
                       (extent.is_number_float() && extent.get<double>() >= 0x1p63);
  if (too_big) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone,
                      "einsum instance: field \"shapes\": extent {} does not fit in int64", extent.dump());
  }
  if (!extent.is_number_integer()) return malformed("shapes", "integer extents");
  return extent.get<std::int64_t>();
}

Result<ReferencePath> parse_path(const Json& paths, const char* key, std::size_t num_inputs) {
  const std::string field = std::string("paths.") + key;
  const Json& entry = paths.at(key);
  if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_array()) {
    return malformed(field, "an object with a \"path\" array");
  }
  ReferencePath path;
  for (const Json& pair : entry["path"]) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer()) {
      return malformed(field + ".path", "pairs of integers (opt_einsum format)");
    }
    path.pairs.emplace_back(pair[0].get<std::int64_t>(), pair[1].get<std::int64_t>());
  }
  if (!entry.contains("log10_flops") || !entry["log10_flops"].is_number() || !entry.contains("log2_size") ||
      !entry["log2_size"].is_number()) {
    return malformed(field, "numbers \"log10_flops\" and \"log2_size\"");
  }
  // A path that does not contract these inputs is refused here, where the
  // file and the field are known, not when it is planned.
  if (Result<ContractionOrder> order =
          ContractionOrder::from_opt_einsum_path(static_cast<std::int32_t>(num_inputs), path.pairs);
      !order.ok()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "einsum instance: field \"{}.path\": {}", field,
                      order.status().message());
  }
  path.log10_flops = entry["log10_flops"].get<double>();
  path.log2_size = entry["log2_size"].get<double>();
  return path;
}

}  // namespace

std::vector<IntArrayRef> BenchmarkInstance::shape_refs() const {
  std::vector<IntArrayRef> refs;
  refs.reserve(shapes.size());
  for (const auto& shape : shapes) refs.emplace_back(shape);
  return refs;
}

Result<BenchmarkInstance> parse_benchmark_instance(std::string_view json_text) {
  const Json root = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    FirstError error;
    Json::sax_parse(json_text.begin(), json_text.end(), &error, nlohmann::detail::input_format_t::json, true, false);
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "einsum instance: the text is not JSON ({})",
                      error.message);
  }
  if (!root.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum instance: expected a JSON object, found {} {}", root.is_array() ? "an" : "a",
                      root.type_name());
  }
  BenchmarkInstance instance;
  if (root.contains("name") && root["name"].is_string()) instance.name = root["name"].get<std::string>();
  if (!root.contains("format_string") || !root["format_string"].is_string()) {
    return malformed("format_string", "a string such as \"ij,jk->ik\"");
  }
  instance.format_string = root["format_string"].get<std::string>();
  if (!root.contains("shapes") || !root["shapes"].is_array()) return malformed("shapes", "an array of shapes");
  for (const Json& shape : root["shapes"]) {
    if (!shape.is_array()) return malformed("shapes", "an array of integer arrays");
    std::vector<std::int64_t> extents;
    for (const Json& extent : shape) {
      TENFERRO_ASSIGN_OR_RETURN(std::int64_t e, parse_extent(extent));
      extents.push_back(e);
    }
    instance.shapes.push_back(std::move(extents));
  }
  // One shape per operand (subscripts that do not parse are reported when
  // they are used), and num_tensors, when given, agrees.
  if (Result<Subscripts> subscripts = Subscripts::parse(instance.format_string);
      subscripts.ok() && static_cast<std::size_t>(subscripts->num_operands()) != instance.shapes.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum instance: format_string \"{}\" has {} operand{}, but \"shapes\" lists {} shape{}",
                      instance.format_string, subscripts->num_operands(), subscripts->num_operands() == 1 ? "" : "s",
                      instance.shapes.size(), instance.shapes.size() == 1 ? "" : "s");
  }
  if (root.contains("num_tensors") && (!root["num_tensors"].is_number_unsigned() ||
                                       root["num_tensors"].get<std::uint64_t>() != instance.shapes.size())) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum instance: field \"num_tensors\" is {}; expected {}, the number of shapes",
                      root["num_tensors"].dump(), instance.shapes.size());
  }
  if (root.contains("dtype")) {
    const auto dtype = root["dtype"].is_string() ? parse_dtype(root["dtype"].get<std::string>()) : std::nullopt;
    if (!dtype) return malformed("dtype", "a dtype name such as \"float64\"");
    instance.dtype = *dtype;
  }
  if (root.contains("paths") && root["paths"].is_object()) {
    const Json& paths = root["paths"];
    if (paths.contains("opt_flops")) {
      TENFERRO_ASSIGN_OR_RETURN(instance.opt_flops, parse_path(paths, "opt_flops", instance.shapes.size()));
    }
    if (paths.contains("opt_size")) {
      TENFERRO_ASSIGN_OR_RETURN(instance.opt_size, parse_path(paths, "opt_size", instance.shapes.size()));
    }
  }
  return instance;
}

Result<BenchmarkInstance> load_benchmark_instance(const std::string& path) {
  Result<std::string> text = read_input_file(path, ".json instance file", kMaxInstanceFileBytes);
  if (!text.ok()) {
    return Error(text.status().code(), ErrorStage::kNone, fmt::format("einsum instance: {}", text.status().message()));
  }
  auto instance = parse_benchmark_instance(*text);
  if (!instance.ok()) return instance.status().with_context(fmt::format("reading \"{}\"", path));
  if (instance->name.empty()) {
    const std::size_t slash = path.find_last_of('/');
    instance->name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  }
  return instance;
}

}  // namespace tenferro::einsum
