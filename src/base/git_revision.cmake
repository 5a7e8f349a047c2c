# Writes OUT (a C++ source defining tenferro::internal::kGitRevision) from
# the checkout at SOURCE_DIR. Runs at every build, not only at configure
# time, so `tenferro info` and benchmark reports name the commit that was
# built; OUT is rewritten only when the revision changes, so an unchanged
# checkout relinks nothing.
execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT revision)
  set(revision "unknown")
else()
  # Tracked files that differ from HEAD: the build is not that commit.
  execute_process(COMMAND git -C ${SOURCE_DIR} diff --quiet HEAD --
                  ERROR_QUIET RESULT_VARIABLE dirty)
  if(dirty EQUAL 1)
    string(APPEND revision "-dirty")
  endif()
endif()
file(CONFIGURE OUTPUT ${OUT} CONTENT [=[
// Generated at build time by src/base/git_revision.cmake; do not edit.
namespace tenferro::internal {
extern const char kGitRevision[];
const char kGitRevision[] = "@revision@";
}  // namespace tenferro::internal
]=] @ONLY)
