// loaded_binary_dir and the provider file search (build_info.h, Note
// [Locating provider files]).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "tenferro/base/build_info.h"

// Defined by programs compiled against the installed headers (Note [The
// prefix of the headers]); null in tenferro's own binaries.
extern "C" __attribute__((weak, visibility("hidden"))) const char* tenferro_consumer_header_path() noexcept;

namespace tenferro {

namespace {

// Whether `dir` is `root` or lies under it.
bool is_within(std::string_view dir, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || !dir.starts_with(root)) return false;
  return dir.size() == root.size() || dir[root.size()] == '/' || root == "/";
}

// The prefix P when `dir` is P/`suffix` (a relative install directory).
std::optional<std::string_view> prefix_of(std::string_view dir, std::string_view suffix) {
  while (!suffix.empty() && suffix.back() == '/') suffix.remove_suffix(1);
  if (suffix.empty() || suffix.front() == '/' || dir.size() < suffix.size() + 1 || !dir.ends_with(suffix))
    return std::nullopt;
  const std::string_view head = dir.substr(0, dir.size() - suffix.size());
  if (head.back() != '/') return std::nullopt;
  return head.size() == 1 ? head : head.substr(0, head.size() - 1);
}

}  // namespace

std::string loaded_binary_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&loaded_binary_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  // The loader names the main program as it was started (often a relative
  // path); the search compares absolute directories.
  char* resolved = ::realpath(info.dli_fname, nullptr);
  const std::string path = resolved != nullptr ? resolved : info.dli_fname;
  std::free(resolved);
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

ProviderFileSearch provider_file_search(std::string_view binary_dir, std::string_view build_file_dir,
                                        ProviderFileKind kind, const BuildInfo& info, std::string_view header_path) {
  const bool module = kind == ProviderFileKind::kModule;
  const std::string_view installed = module ? info.installed_module_dir : info.installed_data_dir;
  const std::string_view in_prefix = module ? info.module_dir_in_prefix : info.data_dir_in_prefix;
  ProviderFileSearch search;
  search.fallback = installed;
  if (!binary_dir.empty()) search.dirs.emplace_back(binary_dir);
  const std::string python_dir = info.python_package_dir_in_prefix.empty()
                                     ? std::string()
                                     : std::string(info.python_package_dir_in_prefix) + "/tenferro";
  if (!in_prefix.empty()) {  // empty where configured as an absolute path
    for (std::string_view binaries : {info.library_dir_in_prefix, std::string_view(python_dir)}) {
      if (const std::optional<std::string_view> prefix = prefix_of(binary_dir, binaries)) {
        search.fallback = std::string(*prefix) + (prefix->ends_with('/') ? "" : "/") + std::string(in_prefix);
        search.dirs.push_back(search.fallback);
        break;
      }
    }
  }
  // 3. The prefix of the headers the program was compiled against.
  constexpr std::string_view kHeader = "/tenferro/base/consumer_prefix.h";
  if (!in_prefix.empty() && !info.include_dir_in_prefix.empty() && header_path.starts_with('/') &&
      header_path.ends_with(kHeader)) {
    const std::string_view include_dir = header_path.substr(0, header_path.size() - kHeader.size());
    if (const std::optional<std::string_view> prefix = prefix_of(include_dir, info.include_dir_in_prefix)) {
      std::string dir = std::string(*prefix) + (prefix->ends_with('/') ? "" : "/") + std::string(in_prefix);
      if (dir != installed && std::find(search.dirs.begin(), search.dirs.end(), dir) == search.dirs.end()) {
        if (search.fallback == installed) search.fallback = dir;
        search.dirs.push_back(std::move(dir));
      }
    }
  }
  if (is_within(binary_dir, info.build_dir)) {
    search.dirs.emplace_back(build_file_dir);
    search.dirs.emplace_back(installed);
  } else {
    search.dirs.emplace_back(installed);
    search.dirs.emplace_back(build_file_dir);
  }
  return search;
}

std::string locate_provider_file(std::string_view file, std::string_view build_file_dir, ProviderFileKind kind) {
  const char* header = &tenferro_consumer_header_path != nullptr ? tenferro_consumer_header_path() : nullptr;
  ProviderFileSearch search = provider_file_search(loaded_binary_dir(), build_file_dir, kind, build_info(),
                                                   header != nullptr ? std::string_view(header) : std::string_view());
  for (const std::string& dir : search.dirs) {
    if (!dir.empty() && ::access((dir + "/" + std::string(file)).c_str(), F_OK) == 0) return dir;
  }
  return std::move(search.fallback);
}

}  // namespace tenferro
