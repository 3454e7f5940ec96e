# doctest_discover_tests turns each TEST_CASE into a ctest entry and splits names at ';' (a CMake
# list separator): a name with ';' becomes two entries whose filters match nothing, so the case
# silently never runs. Fails naming every such case in tests/.
# Run as: cmake -DSOURCE_DIR=... -P test_case_names.cmake (ctest does).
cmake_minimum_required(VERSION 3.25)
file(GLOB_RECURSE sources ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/tests/*.h)
set(bad "")
foreach(src ${sources})
  file(STRINGS ${src} lines REGEX "TEST_CASE\\(\"")
  foreach(line IN LISTS lines)
    # file(STRINGS) keeps a ';' inside a line as "\;" (or splits there): either way the name,
    # up to its closing quote, holds a ';' or is cut short before that quote.
    if(line MATCHES "TEST_CASE\\(\"[^\"]*;" OR NOT line MATCHES "TEST_CASE\\(\"[^\"]*\"")
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${src})
      list(APPEND bad "${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "test case names with ';' (ctest would never run them):\n  ${text}")
endif()
list(LENGTH sources n)
message(STATUS "test case names: none of ${n} files has a ';' in a TEST_CASE name")
