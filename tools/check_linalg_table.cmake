# `tenferro bench linalg crossover --table-out FILE` writes a provider table
# the linalg engine reads back: `tenferro info --json` with
# TENFERRO_LINALG_PROVIDER_TABLE=FILE reports that file and its source, and a
# malformed file is reported as an error naming it.
set(table ${WORK_DIR}/crossover_table.json)
file(REMOVE ${table})
execute_process(COMMAND ${TENFERRO} bench linalg crossover --quick --runs 1 --table-out ${table}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${table})
  message(FATAL_ERROR "tenferro bench linalg crossover --table-out exited with ${rc}: ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env TENFERRO_LINALG_PROVIDER_TABLE=${table} ${TENFERRO} info --json
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tenferro info --json exited with ${rc}")
endif()
string(JSON path GET "${out}" linalg provider_table)
string(JSON source ERROR_VARIABLE no_source GET "${out}" linalg source)
if(NOT path STREQUAL table OR no_source OR NOT source MATCHES "crossover --quick")
  message(FATAL_ERROR "expected the written table ${table} to be read back, found: ${out}")
endif()
# A malformed or missing table: the document names it in linalg.error, the
# error goes to stderr, and the command exits 1 (as for a bad
# TENFERRO_CPU_ISA).
file(WRITE ${WORK_DIR}/malformed_table.json "{ not json")
file(REMOVE ${WORK_DIR}/missing_table.json)
foreach(bad IN ITEMS malformed_table.json missing_table.json)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env TENFERRO_LINALG_PROVIDER_TABLE=${WORK_DIR}/${bad}
                  ${TENFERRO} info --json OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  string(JSON error ERROR_VARIABLE no_error GET "${out}" linalg error)
  if(no_error OR NOT error MATCHES "${bad}")
    message(FATAL_ERROR "expected an error naming the table ${bad}, found: ${out}")
  endif()
  if(NOT rc EQUAL 1 OR NOT err MATCHES "^tenferro info: .*${bad}")
    message(FATAL_ERROR "expected exit 1 and the error on stderr for the table ${bad}, found ${rc}: ${err}")
  endif()
endforeach()
message(STATUS "provider table round trip: ${source}")
