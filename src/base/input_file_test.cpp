// Opening input files (input_file.h): only regular files are read.
#include "tenferro/base/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tenferro {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tenferro_input_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFileWhole) {
  std::ofstream(path("a.json")) << "{\"x\": 1}";
  Result<std::string> text = read_input_file(path("a.json"), ".json file", 100);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, "{\"x\": 1}");
  std::ofstream(path("empty.json")).flush();
  EXPECT_EQ(read_input_file(path("empty.json"), ".json file", 100).value(), "");
}

TEST_F(InputFileTest, RefusesWhatIsNotARegularFileBeforeReading) {
  // A FIFO without a writer would block, /dev/zero never ends.
  ASSERT_EQ(::mkfifo(path("fifo.json").c_str(), 0600), 0);
  fs::create_directory(path("dir.json"));
  fs::create_symlink("/dev/zero", path("zero.json"));
  for (const char* name : {"fifo.json", "dir.json", "zero.json"}) {
    Result<std::string> text = read_input_file(path(name), ".json file", 100);
    ASSERT_FALSE(text.ok()) << name;
    EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument) << name;
    EXPECT_NE(text.status().message().find(std::string(name) + ": expected a regular .json file, found a"),
              std::string::npos)
        << text.status().message();
  }
  EXPECT_NE(read_input_file(path("fifo.json"), ".json file", 100).status().message().find("found a FIFO"),
            std::string::npos);
}

TEST_F(InputFileTest, MissingAndOversizedFilesAreTyped) {
  Result<std::string> missing = read_input_file(path("missing.json"), ".json file", 100);
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.json: cannot open it for reading: No such file or directory"),
            std::string::npos)
      << missing.status().message();
  std::ofstream(path("big.json")) << std::string(101, ' ');
  Result<std::string> big = read_input_file(path("big.json"), ".json file", 100);
  EXPECT_EQ(big.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("expected a .json file of at most 100 bytes, found 101 bytes"),
            std::string::npos)
      << big.status().message();
  EXPECT_EQ(file_error("f", "open it", EACCES).code(), ErrorCode::kPermissionDenied);
}

}  // namespace
}  // namespace tenferro
