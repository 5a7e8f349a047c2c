// loaded_binary_dir and locate_provider_file (build_info.h, Note [Locating
// provider files]).
#include <dlfcn.h>
#include <unistd.h>

#include "tenferro/base/build_info.h"

namespace tenferro {

std::string loaded_binary_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&loaded_binary_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string path = info.dli_fname;
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string locate_provider_file(std::string_view file, std::string_view build_dir, std::string_view installed_dir) {
  const auto holds = [&](const std::string& dir) {
    return !dir.empty() && ::access((dir + "/" + std::string(file)).c_str(), F_OK) == 0;
  };
  for (const std::string& dir : {loaded_binary_dir(), std::string(build_dir)}) {
    if (holds(dir)) return dir;
  }
  return std::string(installed_dir);
}

}  // namespace tenferro
