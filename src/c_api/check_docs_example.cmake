# Fails unless the first ```c block of DOC is exactly EXAMPLE, so the example
# docs/c_api.md shows is the one ctest builds and runs.
#   cmake -DDOC=docs/c_api.md -DEXAMPLE=src/c_api/c_api_example.c -P check_docs_example.cmake
file(READ ${DOC} doc)
file(READ ${EXAMPLE} example)
string(FIND "${doc}" "```c\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: expected a ```c block holding ${EXAMPLE}, found none")
endif()
math(EXPR start "${start} + 5")
string(SUBSTRING "${doc}" ${start} -1 rest)
string(FIND "${rest}" "```\n" length)
string(SUBSTRING "${rest}" 0 ${length} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "the first ```c block of ${DOC} differs from ${EXAMPLE}; copy the file into the document")
endif()
