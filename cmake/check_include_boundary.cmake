# Fails when a source under DIRS includes a tenferro component outside
# ALLOWED. Usage:
#   cmake -DDIRS="a;b" -DALLOWED="base;tensor;program" -P check_include_boundary.cmake
# Used by the `boundary_program_includes` test (the link-level rule is checked
# at configure time by tenferro_check_program_boundary()).
cmake_minimum_required(VERSION 3.25)  # script mode needs IN_LIST (CMP0057)
set(violations "")
foreach(dir IN LISTS DIRS)
  file(GLOB_RECURSE files "${dir}/*.h" "${dir}/*.cpp" "${dir}/*.def" "${dir}/*.inc")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]tenferro/")
    foreach(line IN LISTS lines)
      if(line MATCHES "tenferro/([a-z_]+)[/.]")
        set(component "${CMAKE_MATCH_1}")
        if(NOT component IN_LIST ALLOWED)
          list(APPEND violations "${file}: ${line}")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "component boundary violated (allowed: ${ALLOWED}):\n  ${text}")
endif()
