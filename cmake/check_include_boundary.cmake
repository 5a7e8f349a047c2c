# Fails when a file includes a tenferro component it may not use. Two modes:
#
#   cmake -DMANIFEST=<file> -P check_include_boundary.cmake
#     Every component listed in the manifest (written at configure time by
#     tenferro_write_boundary_manifest()): its files may include public
#     headers ("tenferro/<c>/..." or "tenferro/<c>.h") of itself and of the
#     components it depends on (transitively), and private headers
#     ("<c>/..." under src/) of itself only. Test files (*_test.cpp,
#     *_test_support.*) may also use their TEST_DEPENDS, tenferro::testing
#     and the *_test_support.h headers of components they depend on.
#
#   cmake -DDIRS="a;b" -DALLOWED="base;tensor;program" -P check_include_boundary.cmake
#     Files under DIRS may include public headers of ALLOWED only (used by
#     the test that proves the checker detects a violation).
cmake_minimum_required(VERSION 3.25)  # script mode needs IN_LIST (CMP0057)

set(violations "")

# check_file(<file> <allowed public> <allowed private> <private test-support>)
function(check_file file public private support)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"]tenferro/([a-z_0-9]+)[/.]")
      if(NOT CMAKE_MATCH_1 IN_LIST public)
        list(APPEND violations "${file}: ${line}")
      endif()
    elseif(line MATCHES "\"([a-z_0-9]+)/[^\"]*\"" AND CMAKE_MATCH_1 IN_LIST ALL_COMPONENTS)
      set(component "${CMAKE_MATCH_1}")
      if(NOT component IN_LIST private AND
         NOT (component IN_LIST support AND line MATCHES "_test_support\\.h\""))
        list(APPEND violations "${file}: ${line}")
      endif()
    endif()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

function(files_of dirs out)
  set(result "")
  foreach(dir IN LISTS dirs)
    if(IS_DIRECTORY "${dir}")
      file(GLOB_RECURSE found "${dir}/*.h" "${dir}/*.cpp" "${dir}/*.c" "${dir}/*.def" "${dir}/*.inc" "${dir}/*.cu")
      list(APPEND result ${found})
    elseif(EXISTS "${dir}")
      list(APPEND result "${dir}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

if(DEFINED MANIFEST)
  include("${MANIFEST}")  # sets ALL_COMPONENTS and, per component c, DIRS_c, ALLOWED_c, TEST_ALLOWED_c
  foreach(c IN LISTS ALL_COMPONENTS)
    files_of("${DIRS_${c}}" files)
    foreach(file IN LISTS files)
      get_filename_component(name "${file}" NAME)
      if(name MATCHES "_test\\.(cpp|c)$|_test_support\\.(h|cpp)$")
        check_file("${file}" "${TEST_ALLOWED_${c}}" "${c}" "${TEST_ALLOWED_${c}}")
      else()
        check_file("${file}" "${ALLOWED_${c}}" "${c}" "")
      endif()
    endforeach()
  endforeach()
  set(summary "every component")
else()
  set(ALL_COMPONENTS "")
  files_of("${DIRS}" files)
  foreach(file IN LISTS files)
    check_file("${file}" "${ALLOWED}" "" "")
  endforeach()
  set(summary "allowed: ${ALLOWED}")
endif()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "component boundary violated (${summary}):\n  ${text}")
endif()
