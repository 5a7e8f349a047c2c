# Failures of `tenferro` that must not look like success, hang or abort
# (from CLI audits): an instance too large for its random data, a result
# written to a full stdout, bench inputs that match nothing, a NaN bound, -o
# naming a directory, a --json report naming a file whose name is not UTF-8,
# instance paths that are not regular files, malformed instance contents,
# and option values each parsed by the documented rule.
# Run with -DTENFERRO=<binary> -DWORK_DIR=<scratch directory>.
function(expect_failure rc_want pattern)
  # TIMEOUT: a command that hangs (a FIFO read as an instance) fails here.
  execute_process(COMMAND ${TENFERRO} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
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
# A path the OS refuses (ENAMETOOLONG): typed and counted, not an exception
# out of the directory check.
string(REPEAT "a" 5000 long_name)
expect_failure(1 "could not be measured" bench einsum ${dir}/${long_name} --runs 1 --threads 1)
expect_failure(1 "no case matches .no_such_case." bench gemm no_such_case --threads 1)
expect_failure(105 "positive, finite, whole number of bytes" einsum --max-intermediate nan)
expect_failure(105 "whole number of bytes .such as 2e8., found 1.5" einsum --max-intermediate 1.5)
expect_failure(105 "whole number of bytes .such as 2e8., found 0x100" einsum --max-intermediate 0x100)
expect_failure(105 "0: expected an integer from 1 to" bench gemm dgemm_n256 --threads 0)
expect_failure(105 "expected an integer from 1 to [0-9]+ \\(the CPUs" einsum --threads 0)
expect_failure(105 "expected an integer from 1 to [0-9]+ \\(the CPUs" einsum --threads 5000)
# Under mpirun (Open MPI's environment) the message says how to give a rank
# more cores (the MPI audit).
set(ENV{OMPI_COMM_WORLD_SIZE} 2)
expect_failure(105 "--bind-to none or --map-by slot:PE=N" einsum --threads 5000)
unset(ENV{OMPI_COMM_WORLD_SIZE})
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
# Operands that do not fit the subscripts: the message names their files,
# with the stage every binding gives this failure (docs/errors.md).
expect_failure(1 "compile shape_mismatch: .*\\(operands 0 = .*inputs/0.npy, 1 = .*inputs/1.npy\\)"
               einsum abcdefg,h-> ${dir}/inputs/0.npy ${dir}/inputs/1.npy)
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

# Instance paths that are not regular files are refused before reading (a
# FIFO blocked forever, /dev/zero filled memory, a directory was read as
# empty text), as .npy operands are; a file over 1 GiB is refused unread.
file(CREATE_LINK /dev/zero ${dir}/zero.json SYMBOLIC)
expect_failure(1 "invalid_argument: einsum instance: .*zero.json: expected a regular .json instance file, found a character device"
               einsum ${dir}/zero.json)
file(MAKE_DIRECTORY ${dir}/dir.json)
expect_failure(1 "dir.json: expected a regular .json instance file, found a directory" einsum ${dir}/dir.json)
find_program(MKFIFO mkfifo)
if(MKFIFO)
  execute_process(COMMAND ${MKFIFO} ${dir}/fifo.json)
  expect_failure(1 "fifo.json: expected a regular .json instance file, found a FIFO" einsum ${dir}/fifo.json)
endif()
find_program(TRUNCATE truncate)
if(TRUNCATE)  # sparse: no disk space
  execute_process(COMMAND ${TRUNCATE} -s 1073741825 ${dir}/big.json)
  expect_failure(1 "resource_exhausted: .*big.json: expected a .json instance file of at most 1073741824 bytes"
                 einsum ${dir}/big.json)
endif()
# Missing and unreadable instance files: the code and the system's reason.
expect_failure(1 "not_found: einsum instance: .*missing.json: cannot open it for reading: No such file or directory"
               einsum ${dir}/missing.json)
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT uid STREQUAL "0")  # root reads a mode-000 file
  file(WRITE ${dir}/unreadable.json "{}")
  file(CHMOD ${dir}/unreadable.json PERMISSIONS OWNER_WRITE)
  expect_failure(1 "permission_denied: .*unreadable.json: cannot open it for reading: Permission denied"
                 einsum ${dir}/unreadable.json)
endif()
# Instance contents: an extent of 2^63 or more overflows (not wrapped to a
# negative one); shapes that disagree with the operands, and a reference
# path that does not fit them, name the file and the field.
file(WRITE ${dir}/huge_extent.json
     [=[{"format_string":"ij,jk->ik","shapes":[[4,9223372036854775808],[9223372036854775808,6]]}]=])
expect_failure(1 "size_overflow: .*extent 9223372036854775808 does not fit in int64" einsum ${dir}/huge_extent.json)
file(WRITE ${dir}/shape_count.json [=[{"format_string":"ij,jk->ik","shapes":[[4,5]],
  "paths":{"opt_flops":{"path":[],"log10_flops":1,"log2_size":1}}}]=])
expect_failure(1 "shape_count.json.*format_string \"ij,jk->ik\" has 2 operands, but \"shapes\" lists 1 shape"
               einsum ${dir}/shape_count.json)
file(WRITE ${dir}/bad_path.json [=[{"format_string":"ij,jk,kl->il","shapes":[[2,3],[3,4],[4,5]],
  "paths":{"opt_flops":{"path":[[0,1]],"log10_flops":1,"log2_size":1}}}]=])
expect_failure(1 "bad_path.json.*field \"paths.opt_flops.path\"" einsum ${dir}/bad_path.json)
# Bench inputs that match no case or cannot be measured fail every suite,
# naming the input (the cases that exist still run).
expect_failure(1 "expected no inputs, found 1: nosuchinput" bench selftest nosuchinput)
expect_failure(1 "no case matches 'nosuchcase'" bench gemm dgemm_n256_t1 nosuchcase --runs 1 --threads 1)
expect_failure(1 "missing.json: cannot open it for reading: No such file or directory" bench dot_general
               ${dir}/missing.json --runs 1 --threads 1 --quick)
expect_failure(1 "missing.json: cannot open it for reading|built without MPI" bench mpi ${dir}/missing.json --runs 1)
expect_failure(1 "missing.json: cannot open it for reading" bench permute ${dir}/missing.json --runs 1)
expect_failure(1 "unknown part 'nosuchpart'" bench linalg nosuchpart --runs 1)
# --mode graph: the first call includes the first contraction, so it is
# no faster than the fastest timed run (it timed prepare_for alone).
file(WRITE ${dir}/gemm.json [=[{"format_string":"ij,jk->ik","shapes":[[300,400],[400,500]]}]=])
execute_process(COMMAND ${TENFERRO} einsum ${dir}/gemm.json --mode graph --runs 3 --json RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JSON first GET "${out}" prepare_seconds)
string(JSON fastest GET "${out}" min_seconds)
if(NOT rc EQUAL 0 OR first LESS fastest)
  message(FATAL_ERROR "einsum --mode graph: expected a first call of at least ${fastest} s, found ${first}: ${out}${err}")
endif()
# Option values: bench --threads as the other integers; an empty -o or
# --inputs; an unknown option before the subcommand.
expect_failure(105 "abc: expected an integer from 1 to [0-9]+ \\(the CPUs" bench selftest --threads abc)
expect_failure(105 "0x1: expected an integer from 1 to" bench selftest --threads 0x1)
foreach(option -o --inputs)  # an empty value: not through ARGN, which drops it
  execute_process(COMMAND ${TENFERRO} einsum --runs 0 ${option} "" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 105 OR NOT err MATCHES "expected a (file name|directory), found an empty string")
    message(FATAL_ERROR "einsum ${option} '': expected status 105 and a message, found ${rc}: ${err}")
  endif()
endforeach()
expect_failure(109 "--bogus" --bogus)
# Operands after a `--` that follows the subscripts.
execute_process(COMMAND ${TENFERRO} einsum --runs 0 ...->... -- ${dir}/inputs/0.npy RESULT_VARIABLE rc OUTPUT_QUIET
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "einsum SUBSCRIPTS -- FILE: expected status 0, found ${rc}: ${err}")
endif()
# An invalid TENFERRO_CPU_ISA: info says why, lists no kernel, and fails.
execute_process(COMMAND ${CMAKE_COMMAND} -E env TENFERRO_CPU_ISA=bogus ${TENFERRO} info --json RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JSON kernels ERROR_VARIABLE bad GET "${out}" kernels)
if(NOT rc EQUAL 1 OR NOT err MATCHES "TENFERRO_CPU_ISA" OR bad OR kernels MATCHES "\"(gemm|layout_transpose|vector_math)\"")
  message(FATAL_ERROR "TENFERRO_CPU_ISA=bogus tenferro info: expected status 1 and no kernels, found ${rc}: ${kernels}${err}")
endif()
