#include "bench/bench_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace tenferro::bench {
namespace {

TEST(BenchReportTest, RatioIsOrientedSoHigherIsBetter) {
  Case time{"t", 2.0, "s", 4.0, "numpy"};
  EXPECT_DOUBLE_EQ(*time.ratio(), 2.0);  // we take half the time
  Case rate{"r", 90.0, "GFLOP/s", 100.0, "openblas"};
  EXPECT_DOUBLE_EQ(*rate.ratio(), 0.9);
  Case none{"n", 1.0, "allocs"};
  EXPECT_FALSE(none.ratio().has_value());
  Case zero{"z", 0.0, "allocs", 0.0, "direct"};
  EXPECT_FALSE(zero.ratio().has_value());
}

TEST(BenchReportTest, JsonLinesCarryTheRequiredFields) {
  std::FILE* out = std::tmpfile();
  Reporter reporter("gemm", true, out, nullptr);
  Case c{"dgemm_n256_t1", 50.0, "GFLOP/s", 55.0, "openblas", 1, 7};
  c.extra["n"] = 256;
  reporter.add(c);
  reporter.finish();
  std::rewind(out);
  char line[1024] = {};
  ASSERT_NE(std::fgets(line, sizeof(line), out), nullptr);
  std::fclose(out);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["suite"], "gemm");
  EXPECT_EQ(j["case"], "dgemm_n256_t1");
  EXPECT_EQ(j["unit"], "GFLOP/s");
  EXPECT_EQ(j["baseline_name"], "openblas");
  EXPECT_NEAR(j["ratio"].get<double>(), 50.0 / 55.0, 1e-12);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["runs"], 7);
  EXPECT_EQ(j["n"], 256);
}

TEST(BenchReportTest, TableListsEveryCase) {
  std::FILE* out = std::tmpfile();
  Reporter reporter("x", false, out, nullptr);
  reporter.add(Case{"first", 1.0, "ns"});
  reporter.add(Case{"second", 2.0, "ns", 4.0, "direct"});
  reporter.finish();
  std::rewind(out);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), out) != nullptr) text += buf;
  std::fclose(out);
  EXPECT_NE(text.find("first"), std::string::npos);
  EXPECT_NE(text.find("2.000"), std::string::npos);
}

TEST(BenchReportTest, SamplesStatistics) {
  Samples s{{3.0, 1.0, 2.0, 10.0}};
  EXPECT_DOUBLE_EQ(s.median(), 2.5);
  EXPECT_DOUBLE_EQ(s.min(), 1.0);
  int calls = 0;
  Samples t = time_runs([&calls] { ++calls; }, 4, 0.0);
  EXPECT_EQ(t.runs(), 4u);
  EXPECT_EQ(calls, 5);  // one warm-up
}

TEST(BenchReportTest, PythonPeerGetsItsArgumentsAndThreadCount) {
  if (!std::filesystem::exists(kPeerPython)) GTEST_SKIP() << kPeerPython << " is absent";
  const std::string args[] = {"a b", "{\"k\": [1, 2]}"};
  const std::optional<std::string> out = run_python_peer(
      "import os, sys\nprint(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'], "
      "sys.argv[1:])\n",
      args, 3);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, "3 3 ['a b', '{\"k\": [1, 2]}']\n");
  // A failing script, and an argument the shell quoting cannot carry.
  EXPECT_FALSE(run_python_peer("import sys\nprint('partial')\nsys.exit(2)\n", {}, 1).has_value());
  const std::string quoted[] = {"it's"};
  EXPECT_FALSE(run_python_peer("print(1)\n", quoted, 1).has_value());
}

}  // namespace
}  // namespace tenferro::bench
