// The provider file search order (Note [Locating provider files]).
#include <gtest/gtest.h>

#include "tenferro/base/build_info.h"

namespace tenferro {
namespace {

BuildInfo layout() {
  BuildInfo info{};
  info.installed_module_dir = "/usr/local/lib/tenferro";
  info.installed_data_dir = "/usr/local/share/tenferro";
  info.build_dir = "/src/tf/build";
  info.source_dir = "/src/tf";
  info.module_dir_in_prefix = "lib/tenferro";
  info.data_dir_in_prefix = "share/tenferro";
  info.library_dir_in_prefix = "lib";
  info.python_package_dir_in_prefix = "lib/python3/dist-packages";
  info.include_dir_in_prefix = "include";
  info.program_dir_in_prefix = "bin";
  return info;
}

using Dirs = std::vector<std::string>;

TEST(LocateTest, InstalledLibraryUsesItsOwnPrefixAndNeverTheBuildTree) {
  // libtenferro_c.so installed under a prefix other than the configured one.
  const ProviderFileSearch s =
      provider_file_search("/opt/tf/lib", "/src/tf/build/linalg_modules", ProviderFileKind::kModule, layout());
  EXPECT_EQ(s.dirs, (Dirs{"/opt/tf/lib", "/opt/tf/lib/tenferro", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/opt/tf/lib/tenferro");
  const ProviderFileSearch d =
      provider_file_search("/opt/tf/lib", "/src/tf/build/data", ProviderFileKind::kData, layout());
  EXPECT_EQ(d.dirs[1], "/opt/tf/share/tenferro");
  EXPECT_EQ(d.fallback, "/opt/tf/share/tenferro");
}

// The `tenferro` command links the libraries statically: its own directory
// (PREFIX/bin) gives the prefix it was installed under (the CLI audit found an
// install under another prefix looking in /usr/local).
TEST(LocateTest, InstalledProgramFindsItsPrefix) {
  const ProviderFileSearch s =
      provider_file_search("/opt/tf/bin", "/src/tf/build/linalg_modules", ProviderFileKind::kModule, layout());
  EXPECT_EQ(s.dirs, (Dirs{"/opt/tf/bin", "/opt/tf/lib/tenferro", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/opt/tf/lib/tenferro");
  EXPECT_EQ(provider_file_search("/opt/tf/bin", "/b/d", ProviderFileKind::kData, layout()).fallback,
            "/opt/tf/share/tenferro");
}

TEST(LocateTest, InstalledPythonPackageFindsThePrefix) {
  const ProviderFileSearch s =
      provider_file_search("/home/u/p/lib/python3/dist-packages/tenferro", "/b/m", ProviderFileKind::kModule, layout());
  EXPECT_EQ(s.dirs, (Dirs{"/home/u/p/lib/python3/dist-packages/tenferro", "/home/u/p/lib/tenferro",
                          "/usr/local/lib/tenferro"}));
  // The root as prefix.
  EXPECT_EQ(provider_file_search("/lib", "/b/m", ProviderFileKind::kModule, layout()).dirs[1], "/lib/tenferro");
}

TEST(LocateTest, BuildTreeBinariesPreferTheBuildTree) {
  const ProviderFileSearch s = provider_file_search("/src/tf/build/src/c_api", "/src/tf/build/linalg_modules",
                                                    ProviderFileKind::kModule, layout());
  EXPECT_EQ(s.dirs, (Dirs{"/src/tf/build/src/c_api", "/src/tf/build/linalg_modules", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/usr/local/lib/tenferro");
  // A sibling directory sharing the name's prefix is not inside the tree.
  const ProviderFileSearch sibling =
      provider_file_search("/src/tf/build-other", "/src/tf/build/m", ProviderFileKind::kModule, layout());
  EXPECT_EQ(sibling.dirs, (Dirs{"/src/tf/build-other", "/usr/local/lib/tenferro"}));
}

TEST(LocateTest, ProgramsOutsideAnyLayoutTryTheConfiguredInstallNotTheBuildTree) {
  // A program linking the static libraries, built in its own directory.
  const ProviderFileSearch s =
      provider_file_search("/home/u/app/build", "/src/tf/build/linalg_modules", ProviderFileKind::kModule, layout());
  EXPECT_EQ(s.dirs, (Dirs{"/home/u/app/build", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/usr/local/lib/tenferro");
  // "lib" must be a whole trailing component: /x/mylib is not a prefix's lib.
  EXPECT_EQ(provider_file_search("/x/mylib", "/b", ProviderFileKind::kModule, layout()).dirs.size(), 2u);
}

TEST(LocateTest, StaticConsumersFindThePrefixOfTheHeadersTheyWereCompiledAgainst) {
  // Note [The prefix of the headers]: installed under /opt/tf, the build
  // tree still there, the program in its own directory.
  const std::string_view header = "/opt/tf/include/tenferro/base/consumer_prefix.h";
  const ProviderFileSearch s = provider_file_search("/home/u/app/build", "/src/tf/build/linalg_modules",
                                                    ProviderFileKind::kModule, layout(), header);
  EXPECT_EQ(s.dirs, (Dirs{"/home/u/app/build", "/opt/tf/lib/tenferro", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/opt/tf/lib/tenferro");  // errors name where the install keeps it
  EXPECT_EQ(provider_file_search("/home/u/app", "/b", ProviderFileKind::kData, layout(), header).dirs[1],
            "/opt/tf/share/tenferro");
  // Compiled against the source tree's headers (tenferro built as a
  // subdirectory of the program's project): the build tree, last.
  EXPECT_EQ(provider_file_search("/home/u/app", "/b", ProviderFileKind::kModule, layout(),
                                 "/src/tf/include/tenferro/base/consumer_prefix.h")
                .dirs,
            (Dirs{"/home/u/app", "/usr/local/lib/tenferro", "/b"}));
  // An install inside the source tree is an install.
  EXPECT_EQ(provider_file_search("/home/u/app", "/b", ProviderFileKind::kModule, layout(),
                                 "/src/tf/build/pkg/prefix/include/tenferro/base/consumer_prefix.h")
                .dirs,
            (Dirs{"/home/u/app", "/src/tf/build/pkg/prefix/lib/tenferro", "/usr/local/lib/tenferro"}));
  // A relative path, or another file: nothing added.
  for (std::string_view other : {"include/tenferro/base/consumer_prefix.h", "/opt/tf/include/tenferro/base/status.h"}) {
    const ProviderFileSearch o = provider_file_search("/home/u/app", "/b", ProviderFileKind::kModule, layout(), other);
    EXPECT_EQ(o.dirs, (Dirs{"/home/u/app", "/usr/local/lib/tenferro"})) << other;
  }
  // The configured prefix itself is not searched twice.
  EXPECT_EQ(provider_file_search("/home/u/app", "/b", ProviderFileKind::kModule, layout(),
                                 "/usr/local/include/tenferro/base/consumer_prefix.h")
                .dirs,
            (Dirs{"/home/u/app", "/usr/local/lib/tenferro"}));
}

TEST(LocateTest, TheNamedPrefixComesFirstAndIsNamedWhenNothingHoldsTheFile) {
  // TENFERRO_PREFIX=/moved/tf for a program compiled against /opt/tf.
  const std::string_view header = "/opt/tf/include/tenferro/base/consumer_prefix.h";
  const ProviderFileSearch s = provider_file_search("/home/u/app", "/src/tf/build/linalg_modules",
                                                    ProviderFileKind::kModule, layout(), header, "/moved/tf/");
  EXPECT_EQ(s.dirs, (Dirs{"/moved/tf/lib/tenferro", "/home/u/app", "/opt/tf/lib/tenferro", "/usr/local/lib/tenferro"}));
  EXPECT_EQ(s.fallback, "/moved/tf/lib/tenferro");
  EXPECT_EQ(provider_file_search("/opt/tf/lib", "/b", ProviderFileKind::kData, layout(), {}, "/moved/tf").fallback,
            "/moved/tf/share/tenferro");
  // An absolute install layout: the default layout under the named prefix.
  BuildInfo absolute = layout();
  absolute.module_dir_in_prefix = "";
  EXPECT_EQ(provider_file_search("/x", "/b", ProviderFileKind::kModule, absolute, {}, "/p").dirs[0], "/p/lib/tenferro");
}

TEST(LocateTest, AbsoluteInstallDirsDisableThePrefixSearch) {
  BuildInfo info = layout();
  info.module_dir_in_prefix = "";
  info.library_dir_in_prefix = "";
  const ProviderFileSearch s = provider_file_search("/opt/tf/lib", "/b/m", ProviderFileKind::kModule, info);
  EXPECT_EQ(s.dirs, (Dirs{"/opt/tf/lib", "/usr/local/lib/tenferro"}));
}

TEST(LocateTest, ThisBuildsLayoutIsRelative) {
  // The configured layout the search relies on (GNUInstallDirs' defaults).
  const BuildInfo& info = build_info();
  EXPECT_FALSE(info.build_dir.empty());
  EXPECT_TRUE(info.installed_module_dir.ends_with(info.module_dir_in_prefix)) << info.installed_module_dir;
  EXPECT_TRUE(info.installed_data_dir.ends_with(info.data_dir_in_prefix)) << info.installed_data_dir;
  EXPECT_TRUE(info.module_dir_in_prefix.starts_with(info.library_dir_in_prefix));
  // This test binary lies in the build tree, so the build tree comes before
  // the configured install.
  const ProviderFileSearch s = provider_file_search(loaded_binary_dir(), "/b/m", ProviderFileKind::kModule, info);
  ASSERT_GE(s.dirs.size(), 3u);
  EXPECT_EQ(s.dirs[1], "/b/m");
}

}  // namespace
}  // namespace tenferro
