# Checks that every referenced note is defined.
#
#   cmake -DROOT=<repo> [-DDIRS=src;include;...] -P cmake/check_notes.cmake
#
# Long explanations live in note blocks: a comment block that starts with a
# line "// Note" followed by the title in square brackets (or "#", "///",
# " *" in C block comments), or, in docs/, a markdown heading or line that
# starts with the note's title. Elsewhere a comment refers to the note by
# the same words ("Note" and the bracketed title; a title may wrap onto the
# next comment line). This script lists every reference whose title has no
# definition in any scanned file and fails if there is one. It scans the
# C/C++ sources, headers, .def, .cmake, CMakeLists.txt, Python and markdown files
# under DIRS (default: src include tools cmake examples docs fuzz python,
# relative to ROOT), skipping any testdata/ folder, so the fixtures of its
# own test are not part of the tree it checks. Inline code spans (`...`) in markdown are
# ignored (CONTRIBUTING.md shows the syntax that way).
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repo> [-DDIRS=a;b] -P check_notes.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
if(NOT DEFINED DIRS)
  set(DIRS src include tools cmake examples docs fuzz python)
endif()

# "[" and "]" would change how CMake splits lists, so file contents are
# matched with these two stand-ins instead.
string(ASCII 2 _lb)
string(ASCII 3 _rb)
string(ASCII 4 _sep)
set(_open "[")
set(_close "]")
set(_ref_re "Note[ \t]+${_lb}[^${_rb}]*${_rb}")
set(_src_def_re "^[ \t]*(//+|#+|/?\\*+)[ \t]*Note[ \t]+${_lb}([^${_rb}]+)${_rb}")
set(_md_def_re "^[ \t]*(#+[ \t]*)?Note[ \t]+${_lb}([^${_rb}]+)${_rb}")
set(_comment_prefix_re "^(//+!?|#+|/?\\*+/?)[ \t]*(.*)$")

set(_globs)
foreach(_dir IN LISTS DIRS)
  foreach(_pattern *.c *.cc *.cpp *.h *.hpp *.def *.cmake CMakeLists.txt *.md *.py)
    list(APPEND _globs "${ROOT}/${_dir}/${_pattern}")
  endforeach()
endforeach()
file(GLOB_RECURSE _files LIST_DIRECTORIES false ${_globs})
list(REMOVE_DUPLICATES _files)
list(SORT _files)

set(_defined "")    # titles, each wrapped in stand-ins, concatenated
set(_refs "")       # "<rel>:<line><_sep><title>" entries (list)
set(_scanned 0)
foreach(_file IN LISTS _files)
  file(RELATIVE_PATH _rel "${ROOT}" "${_file}")
  if(_rel MATCHES "(^|/)testdata/")
    continue()
  endif()
  file(READ "${_file}" _content)
  string(FIND "${_content}" "Note" _pos)
  if(_pos EQUAL -1)
    continue()
  endif()
  math(EXPR _scanned "${_scanned} + 1")
  set(_is_md FALSE)
  if(_file MATCHES "\\.md$")
    set(_is_md TRUE)
  endif()
  string(REPLACE "\r" "" _content "${_content}")
  string(REPLACE ";" "," _content "${_content}")
  string(REPLACE "\\" "/" _content "${_content}")
  string(REPLACE "${_open}" "${_lb}" _content "${_content}")
  string(REPLACE "${_close}" "${_rb}" _content "${_content}")
  # One list element per line; the added space keeps empty lines as elements.
  string(REPLACE "\n" " ;" _lines " ${_content}")
  set(_n 0)
  set(_carry "")
  set(_carry_line 0)
  foreach(_line IN LISTS _lines)
    math(EXPR _n "${_n} + 1")
    if(_carry STREQUAL "" AND NOT _line MATCHES "Note")
      continue()
    endif()
    if(_is_md)
      string(REGEX REPLACE "`[^`]*`" "" _line "${_line}")
      if(_line MATCHES "${_md_def_re}")
        string(REGEX REPLACE "[ \t]+" " " _title "${CMAKE_MATCH_2}")
        string(APPEND _defined "${_lb}${_title}${_rb}")
      endif()
    elseif(_line MATCHES "${_src_def_re}")
      string(REGEX REPLACE "[ \t]+" " " _title "${CMAKE_MATCH_2}")
      string(APPEND _defined "${_lb}${_title}${_rb}")
    endif()
    # A reference left open on the previous line continues on this one.
    set(_text "${_line}")
    set(_start_line ${_n})
    if(NOT _carry STREQUAL "")
      string(STRIP "${_line}" _rest)
      if(_rest MATCHES "${_comment_prefix_re}")
        set(_rest "${CMAKE_MATCH_2}")
      endif()
      set(_text "${_carry} ${_rest}")
      set(_start_line ${_carry_line})
      # Only the carried reference starts on the previous line; any later
      # one in _text is on this line, which the separate scan below covers.
      string(REGEX MATCH "^${_ref_re}" _first "${_text}")
      if(NOT _first STREQUAL "")
        string(REGEX REPLACE "^Note[ \t]+${_lb}(.*)${_rb}$" "\\1" _title "${_first}")
        string(REGEX REPLACE "[ \t]+" " " _title "${_title}")
        string(STRIP "${_title}" _title)
        list(APPEND _refs "${_rel}:${_carry_line}${_sep}${_title}")
      endif()
      set(_carry "")
      set(_text "${_line}")
    endif()
    string(REGEX MATCHALL "${_ref_re}" _found "${_text}")
    foreach(_ref IN LISTS _found)
      string(REGEX REPLACE "^Note[ \t]+${_lb}(.*)${_rb}$" "\\1" _title "${_ref}")
      string(REGEX REPLACE "[ \t]+" " " _title "${_title}")
      string(STRIP "${_title}" _title)
      list(APPEND _refs "${_rel}:${_n}${_sep}${_title}")
    endforeach()
    # An unclosed reference at the end of the line: "Note" alone, or
    # "Note" and the start of a title.
    if(_text MATCHES "(Note[ \t]*(${_lb}[^${_rb}]*)?)[ \t]*$")
      set(_carry "${CMAKE_MATCH_1}")
      set(_carry_line ${_n})
    endif()
  endforeach()
endforeach()

set(_dangling "")
set(_count 0)
foreach(_ref IN LISTS _refs)
  string(FIND "${_ref}" "${_sep}" _cut)
  string(SUBSTRING "${_ref}" 0 ${_cut} _where)
  math(EXPR _cut "${_cut} + 1")
  string(SUBSTRING "${_ref}" ${_cut} -1 _title)
  string(FIND "${_defined}" "${_lb}${_title}${_rb}" _at)
  if(_at EQUAL -1)
    string(APPEND _dangling "\n  ${_where}: Note ${_open}${_title}${_close}")
    math(EXPR _count "${_count} + 1")
  endif()
endforeach()

list(LENGTH _refs _nrefs)
if(_count GREATER 0)
  message(FATAL_ERROR "${_count} note reference(s) without a definition:${_dangling}")
endif()
message(STATUS "notes: ${_nrefs} references in ${_scanned} files, all defined")
