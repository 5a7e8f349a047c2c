# Fails unless every symbol LIBRARY defines in its dynamic symbol table is a
# tf_* function of the C API (exports.map hides the C++ inside).
#   cmake -DNM=<nm> -DLIBRARY=<libtenferro_c.so> -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(api 0)
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; type A marks the version node.
  if(line MATCHES "^[0-9a-fA-F]* ([A-Za-z]) ([^ ]+)$")
    set(type ${CMAKE_MATCH_1})
    set(name ${CMAKE_MATCH_2})
    if(type STREQUAL "A")
      continue()
    endif()
    string(REGEX REPLACE "@.*$" "" name "${name}")
    if(NOT name MATCHES "^tf_")
      message(FATAL_ERROR "libtenferro_c exports '${name}' (${type}); expected only tf_* symbols")
    endif()
    math(EXPR api "${api} + 1")
  endif()
endforeach()
if(api LESS 10)
  message(FATAL_ERROR "expected the tf_* API among the exports of ${LIBRARY}, found ${api} symbols")
endif()
message(STATUS "${api} tf_* symbols exported, nothing else")
