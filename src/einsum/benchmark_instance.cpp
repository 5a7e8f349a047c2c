// Reading einsum benchmark instance files (benchmark_instance.h) with
// nlohmann-json in its non-throwing mode: malformed input becomes a typed
// error, never an exception.
#include "tenferro/einsum/benchmark_instance.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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

Result<ReferencePath> parse_path(const Json& paths, const char* key) {
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
      if (!extent.is_number_integer()) return malformed("shapes", "integer extents");
      extents.push_back(extent.get<std::int64_t>());
    }
    instance.shapes.push_back(std::move(extents));
  }
  if (root.contains("dtype")) {
    const auto dtype = root["dtype"].is_string() ? parse_dtype(root["dtype"].get<std::string>()) : std::nullopt;
    if (!dtype) return malformed("dtype", "a dtype name such as \"float64\"");
    instance.dtype = *dtype;
  }
  if (root.contains("paths") && root["paths"].is_object()) {
    const Json& paths = root["paths"];
    if (paths.contains("opt_flops")) {
      TENFERRO_ASSIGN_OR_RETURN(instance.opt_flops, parse_path(paths, "opt_flops"));
    }
    if (paths.contains("opt_size")) {
      TENFERRO_ASSIGN_OR_RETURN(instance.opt_size, parse_path(paths, "opt_size"));
    }
  }
  return instance;
}

Result<BenchmarkInstance> load_benchmark_instance(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return make_error(ErrorCode::kNotFound, ErrorStage::kNone, "einsum instance: cannot read \"{}\"", path);
  }
  std::ostringstream text;
  text << file.rdbuf();
  auto instance = parse_benchmark_instance(text.str());
  if (!instance.ok()) return instance.status().with_context(fmt::format("reading \"{}\"", path));
  if (instance->name.empty()) {
    const std::size_t slash = path.find_last_of('/');
    instance->name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  }
  return instance;
}

}  // namespace tenferro::einsum
