# Failures of `tenferro` that must not look like success or abort (from a
# CLI audit): an instance too large for its random data, a result written
# to a full stdout, bench inputs that match nothing, a NaN bound, -o naming
# a directory, and a
# --json report naming a file whose name is not UTF-8.
# Run with -DTENFERRO=<binary> -DWORK_DIR=<scratch directory>.
function(expect_failure rc_want pattern)
  execute_process(COMMAND ${TENFERRO} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "${rc_want}" OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "tenferro ${ARGN}: expected status ${rc_want} and '${pattern}' on stderr, found ${rc}:\n${err}")
  endif()
endfunction()

set(dir ${WORK_DIR}/cli_failures)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
file(WRITE ${dir}/huge.json [=[{"name":"huge","format_string":"ij,jk->ik","shapes":[[200000,200000],[200000,4]]}]=])
expect_failure(1 "resource_exhausted" einsum ${dir}/huge.json)
expect_failure(1 "resource_exhausted" einsum ${dir}/huge.json --max-intermediate 1e6)
expect_failure(1 "could not be measured" bench einsum ${dir}/huge.json --runs 1 --threads 1)
expect_failure(1 "no case ran" bench gemm no_such_case --threads 1)
expect_failure(105 "positive, finite number of bytes" einsum --max-intermediate nan)
expect_failure(105 "expected 1 to" bench gemm dgemm_n256 --threads 0)
expect_failure(105 "expected an integer from 1 to [0-9]+ \\(the CPUs" einsum --threads 0)
expect_failure(105 "expected an integer from 1 to [0-9]+ \\(the CPUs" einsum --threads 5000)
# Integer values: the whole text, in range (not wrapped, not read as out of range).
expect_failure(105 "abc: expected an integer from 0 to 1000000" einsum --runs abc)
expect_failure(105 "1.5: expected an integer from 0 to 1000000" einsum --runs 1.5)
expect_failure(105 "-3: expected an integer from 0 to 18446744073709551615" einsum --seed -3)
expect_failure(105 "expected an integer from 1 to 1000000" bench gemm --runs 0)
expect_failure(106 "unknown subcommand 'einsm'" einsm ij,jk->ik)
expect_failure(106 "expected a suite, one of:.*gemm" bench)
# --inputs DIR holding more operands than the subscripts take: a note.
file(MAKE_DIRECTORY ${dir}/inputs)
execute_process(COMMAND ${TENFERRO} einsum --runs 0 -o ${dir}/inputs/0.npy RESULT_VARIABLE rc)
file(COPY_FILE ${dir}/inputs/0.npy ${dir}/inputs/1.npy)
execute_process(COMMAND ${TENFERRO} einsum ...->... --inputs ${dir}/inputs --runs 0 RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "1.npy is not read \\(the contraction has 1 operand\\)")
  message(FATAL_ERROR "einsum --inputs with an extra file: expected status 0 and a note, found ${rc}: ${err}")
endif()
execute_process(COMMAND ${TENFERRO} einsum ...->... ${dir}/inputs/0.npy --seed 3 RESULT_VARIABLE rc OUTPUT_QUIET
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "--seed is not used")
  message(FATAL_ERROR "einsum FILE --seed: expected status 0 and a note, found ${rc}: ${err}")
endif()
# -o naming a directory: refused before anything runs or is reported written.
expect_failure(1 "found a directory" einsum --runs 0 -o ${dir})
expect_failure(1 "found a directory" einsum --runs 0 --max-intermediate 1e4 -o ${dir})
if(EXISTS /dev/full)
  execute_process(COMMAND ${TENFERRO} info OUTPUT_FILE /dev/full RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "writing to standard output failed")
    message(FATAL_ERROR "tenferro info > /dev/full: expected status 1 and a message, found ${rc}: ${err}")
  endif()
endif()
# A file name with a byte that is not UTF-8: the JSON report replaces it.
string(ASCII 255 bad_byte)
set(odd ${dir}/out${bad_byte}.npy)
execute_process(COMMAND ${TENFERRO} einsum --runs 0 --json -o ${odd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"output\"")
  message(FATAL_ERROR "einsum --json -o <non-UTF-8 name>: expected status 0 and a JSON report, found ${rc}:\n${out}${err}")
endif()
