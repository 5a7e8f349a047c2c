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
                                        ProviderFileKind kind, const BuildInfo& info, std::string_view header_path,
                                        std::string_view prefix) {
  const bool module = kind == ProviderFileKind::kModule;
  const std::string_view installed = module ? info.installed_module_dir : info.installed_data_dir;
  const std::string_view in_prefix = module ? info.module_dir_in_prefix : info.data_dir_in_prefix;
  const std::string_view absolute_in_prefix = module ? "lib/tenferro" : "share/tenferro";
  const auto under = [&](std::string_view p) {
    // An absolute install layout has no place under another prefix: the
    // GNUInstallDirs defaults stand in for it.
    const std::string_view dir = in_prefix.empty() ? absolute_in_prefix : in_prefix;
    return std::string(p) + (p.ends_with('/') ? "" : "/") + std::string(dir);
  };
  ProviderFileSearch search;
  search.fallback = installed;
  // 0. The prefix the user names.
  if (!prefix.empty()) {
    search.fallback = under(prefix);
    search.dirs.push_back(search.fallback);
  }
  if (!binary_dir.empty()) search.dirs.emplace_back(binary_dir);
  const std::string python_dir = info.python_package_dir_in_prefix.empty()
                                     ? std::string()
                                     : std::string(info.python_package_dir_in_prefix) + "/tenferro";
  if (!in_prefix.empty()) {  // empty where configured as an absolute path
    for (std::string_view binaries :
         {info.library_dir_in_prefix, std::string_view(python_dir), info.program_dir_in_prefix}) {
      if (const std::optional<std::string_view> p = prefix_of(binary_dir, binaries)) {
        std::string dir = under(*p);
        if (prefix.empty()) search.fallback = dir;
        search.dirs.push_back(std::move(dir));
        break;
      }
    }
  }
  // 3. The prefix of the headers the program was compiled against.
  constexpr std::string_view kHeader = "/tenferro/base/consumer_prefix.h";
  const bool absolute_header = header_path.starts_with('/') && header_path.ends_with(kHeader);
  // The source tree's own include/ (not an install that happens to lie in
  // the source or build tree).
  const bool source_headers = absolute_header && !info.source_dir.empty() && header_path.starts_with(info.source_dir) &&
                              header_path.substr(info.source_dir.size()) == "/include" + std::string(kHeader);
  if (!in_prefix.empty() && !info.include_dir_in_prefix.empty() && absolute_header && !source_headers) {
    const std::string_view include_dir = header_path.substr(0, header_path.size() - kHeader.size());
    if (const std::optional<std::string_view> p = prefix_of(include_dir, info.include_dir_in_prefix)) {
      std::string dir = under(*p);
      if (dir != installed && std::find(search.dirs.begin(), search.dirs.end(), dir) == search.dirs.end()) {
        if (search.fallback == installed) search.fallback = dir;
        search.dirs.push_back(std::move(dir));
      }
    }
  }
  // 4. The configured install; the build tree only for its own binaries and
  // for programs compiled against the source tree's headers.
  if (is_within(binary_dir, info.build_dir)) {
    search.dirs.emplace_back(build_file_dir);
    search.dirs.emplace_back(installed);
  } else {
    search.dirs.emplace_back(installed);
    if (source_headers) search.dirs.emplace_back(build_file_dir);
  }
  return search;
}

std::string locate_provider_file(std::string_view file, std::string_view build_file_dir, ProviderFileKind kind) {
  const char* header = &tenferro_consumer_header_path != nullptr ? tenferro_consumer_header_path() : nullptr;
  const char* prefix = std::getenv(kPrefixEnv.data());  // a literal: NUL-terminated
  ProviderFileSearch search = provider_file_search(loaded_binary_dir(), build_file_dir, kind, build_info(),
                                                   header != nullptr ? std::string_view(header) : std::string_view(),
                                                   prefix != nullptr ? std::string_view(prefix) : std::string_view());
  for (const std::string& dir : search.dirs) {
    if (!dir.empty() && ::access((dir + "/" + std::string(file)).c_str(), F_OK) == 0) return dir;
  }
  return std::move(search.fallback);
}

}  // namespace tenferro
