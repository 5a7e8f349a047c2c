// The provider table file (Note [Provider table file]): the packaged file is
// in the writer's own format, a written table read back drives the default
// engine's candidate order, and a missing or malformed file is a typed error
// naming the file and what was wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tenferro/linalg_cpu/cpu_engine.h"
#include "tenferro/linalg_cpu/eigen_provider.h"
#include "tenferro/linalg_cpu/lapack_provider.h"
#include "tenferro/linalg_cpu/provider_policy.h"

namespace tenferro::linalg {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// Every slot measured with the given medians at every size.
ProviderTable uniform_table(double lapack_us, double eigen_us) {
  ProviderTable table;
  table.source = "test table \"quoted\"";
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    DefaultProviderRow& row = table.rows[static_cast<std::size_t>(s)];
    row.slot = static_cast<LinalgSlot>(s);
    row.lapack_us.fill(lapack_us);
    row.eigen_us.fill(eigen_us);
  }
  return table;
}

TEST(ProviderTableTest, PackagedFileIsInTheWritersFormatWithEverySlot) {
  const std::string path = default_provider_table_path();
  Result<ProviderTable> table = read_provider_table(path);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  // Eigen is measured exactly where it serves the slot (not the SVD family).
  const EigenLinalgProvider eigen;
  const auto eigen_serves = [&](LinalgSlot slot) {
    for (int k = 0; k < kNumLinalgOps; ++k) {
      for (const bool vectors : {true, false}) {  // eigh without vectors is its own slot
        LinalgAttributes a;
        a.kind = static_cast<LinalgOpKind>(k);
        a.compute_vectors = vectors;
        if (slot_of(a) == slot) return eigen.plan(LinalgProblem{&a, DType::kFloat64, 4, 4, 1}).ok();
      }
    }
    return false;
  };
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    const DefaultProviderRow& row = table->rows[static_cast<std::size_t>(s)];
    EXPECT_EQ(row.slot, static_cast<LinalgSlot>(s));
    const bool measured = eigen_serves(row.slot);
    for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
      EXPECT_GT(row.lapack_us[c], 0) << to_string(row.slot);
      EXPECT_EQ(row.eigen_us[c] > 0, measured) << to_string(row.slot) << ": " << row.eigen_us[c];
    }
  }
  // What `tenferro bench linalg crossover --table-out` writes is exactly this form.
  EXPECT_EQ(format_provider_table(*table), read_text(path));
}

TEST(ProviderTableTest, WrittenTableIsReadBackAndOrdersTheDefaultEnginesCandidates) {
  const auto op = LinalgOp::qr();
  const std::vector<std::int64_t> dims = {16, 16};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(dims)};
  const std::string eigen_name(EigenLinalgProvider().name());

  const ProviderTable eigen_fast = uniform_table(100, 1);
  const std::string text = format_provider_table(eigen_fast);
  Result<ProviderTable> parsed = parse_provider_table(text, "round-trip");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->source, eigen_fast.source);
  for (std::size_t s = 0; s < eigen_fast.rows.size(); ++s) {
    EXPECT_EQ(parsed->rows[s].slot, eigen_fast.rows[s].slot);
    EXPECT_EQ(parsed->rows[s].lapack_us, eigen_fast.rows[s].lapack_us);
    EXPECT_EQ(parsed->rows[s].eigen_us, eigen_fast.rows[s].eigen_us);
  }

  LinalgEngineOptions options;
  options.provider_table = write_temp("eigen_fast_table.json", text);
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default(options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->policy().table().source, eigen_fast.source);
  Result<LinalgSelection> picked = (*engine)->select(*op, DType::kFloat64, shapes, 1);
  ASSERT_TRUE(picked.ok()) << picked.status().to_string();
  EXPECT_EQ(picked->provider, eigen_name);
  EXPECT_NE(picked->reason.find("lapack 100 us, eigen 1 us -> eigen"), std::string::npos) << picked->reason;

  Result<std::shared_ptr<LapackLinalgProvider>> lapack = LapackLinalgProvider::load();
  if (!lapack.ok()) GTEST_SKIP() << lapack.status().to_string();
  options.provider_table = write_temp("lapack_fast_table.json", format_provider_table(uniform_table(1, 100)));
  engine = CpuLinalgEngine::create_default(options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  picked = (*engine)->select(*op, DType::kFloat64, shapes, 1);
  ASSERT_TRUE(picked.ok()) << picked.status().to_string();
  EXPECT_EQ(picked->provider, (*lapack)->name());
}

// Note [One LU arithmetic]: lu, solve and inverse take LAPACK first even
// where the table measured Eigen faster; the other slots follow the table.
TEST(ProviderTableTest, TheLuFamilyTakesLapackFirstWhateverTheTable) {
  const ProviderTable eigen_fast = uniform_table(100, 1);
  for (const DefaultProviderRow& row : eigen_fast.rows) {
    const bool lu_family =
        row.slot == LinalgSlot::kLu || row.slot == LinalgSlot::kSolve || row.slot == LinalgSlot::kInverse;
    EXPECT_EQ(lapack_pivots_only(row.slot), lu_family) << to_string(row.slot);
    for (std::size_t c = 0; c < kNumSizeClasses; ++c)
      EXPECT_EQ(row.pick(c), lu_family ? "lapack" : "eigen") << to_string(row.slot);
  }
  Result<std::shared_ptr<LapackLinalgProvider>> lapack = LapackLinalgProvider::load();
  if (!lapack.ok()) GTEST_SKIP() << lapack.status().to_string();
  LinalgEngineOptions options;
  options.provider_table = write_temp("eigen_fast_lu_table.json", format_provider_table(eigen_fast));
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default(options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<std::int64_t> dims = {4, 4};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(dims), IntArrayRef(dims)};
  Result<LinalgSelection> picked = (*engine)->select(*LinalgOp::solve(), DType::kFloat64, shapes, 1);
  ASSERT_TRUE(picked.ok()) << picked.status().to_string();
  EXPECT_EQ(picked->provider, (*lapack)->name());
  EXPECT_NE(picked->reason.find("LU family"), std::string::npos) << picked->reason;
}

TEST(ProviderTableTest, MissingFileIsNotFoundNamingTheFile) {
  const std::string path = "/nonexistent/tenferro/table.json";
  Result<ProviderTable> table = read_provider_table(path);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(table.status().message().find(path), std::string_view::npos) << table.status().message();

  LinalgEngineOptions options;
  options.provider_table = path;
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(default_provider_table_path(path), path);
}

TEST(ProviderTableTest, MalformedTablesAreInvalidArgumentsSayingWhatWasWrong) {
  const std::string good = format_provider_table(uniform_table(2, 3));
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  const std::string first_row = "    {\"slot\": \"svd\", \"lapack_us\": [2, 2, 2, 2], \"eigen_us\": [3, 3, 3, 3]},\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ not json", "does not parse"},
      {"[1, 2]", "expected a JSON object"},
      {replaced("tenferro.linalg_provider_table", "other"), "\"format\""},
      {replaced("\"version\": 1", "\"version\": 2"), "\"version\": 1"},
      {replaced("[16, 64, 256, 1024]", "[16, 64]"), "\"sizes\""},
      {replaced("\"slot\": \"qr\"", "\"slot\": \"qrr\""), "'qrr'"},
      {replaced("\"slot\": \"qr\"", "\"slot\": \"svd\""), "'svd' twice"},
      {replaced(first_row, ""), "none for 'svd'"},
      {replaced("\"lapack_us\": [2, 2, 2, 2]", "\"lapack_us\": [2, 2, 2]"), "\"lapack_us\""},
      {replaced("\"eigen_us\": [3, 3, 3, 3]", "\"eigen_us\": [3, -1, 3, 3]"), "\"eigen_us\"[1]"},
      {replaced("\"source\": \"test table \\\"quoted\\\"\"", "\"source\": 5"), "\"source\""},
  };
  for (const auto& [text, hint] : cases) {
    Result<ProviderTable> table = parse_provider_table(text, "my-table.json");
    ASSERT_FALSE(table.ok()) << text;
    EXPECT_EQ(table.status().code(), ErrorCode::kInvalidArgument) << text;
    const std::string message(table.status().message());
    EXPECT_NE(message.find("my-table.json"), std::string::npos) << message;
    EXPECT_NE(message.find(hint), std::string::npos) << hint << " in " << message;
  }
  // Through the engine: the file's path is in the error.
  LinalgEngineOptions options;
  options.provider_table = write_temp("malformed_table.json", "{ not json");
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(engine.status().message().find(options.provider_table), std::string_view::npos);
}

}  // namespace
}  // namespace tenferro::linalg
