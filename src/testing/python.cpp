// run_python: one temporary script file, one popen.
#include "tenferro/testing/python.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tenferro::testing {

std::optional<std::string> run_python(const std::string& script) {
  const std::string python = TENFERRO_REFERENCE_PYTHON;
  if (python.empty() || !std::filesystem::exists(python)) return std::nullopt;
  std::string path = (std::filesystem::temp_directory_path() / "tenferro_reference_XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return std::nullopt;
  ::close(fd);
  {
    std::ofstream f(path);
    f << script;
  }
  std::string out;
  int status = -1;
  if (std::FILE* pipe = ::popen((python + " " + path + " 2>/dev/null").c_str(), "r")) {
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    status = ::pclose(pipe);
  }
  std::filesystem::remove(path);
  if (status != 0) return std::nullopt;
  return out;
}

}  // namespace tenferro::testing
