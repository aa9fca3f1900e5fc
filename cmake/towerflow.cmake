# Helpers shared by every module: tw_library, tw_test.

# -Wno-restrict: GCC 12 reports false overlaps inside std::string at -O3 (GCC bug
# 105651); the warning is useless on this code and would break -Werror builds.
set(TW_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-restrict)
if(TOWERFLOW_WERROR)
  list(APPEND TW_WARNINGS -Werror)
endif()
if(TOWERFLOW_SANITIZE)
  add_compile_options(-fsanitize=${TOWERFLOW_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TOWERFLOW_SANITIZE})
endif()

# tw_library(NAME SRCS ... DEPS ...): one static library per module; DEPS are the
# only modules it may use, so the linker enforces the one-way dependencies.
function(tw_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
  target_compile_options(${name} PRIVATE ${TW_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tw_test(NAME SRCS ... DEPS ... LABELS ...): a GoogleTest binary registered with CTest.
function(tw_test name)
  if(NOT TOWERFLOW_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_compile_options(${name} PRIVATE ${TW_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT ARG_LABELS)
    set(ARG_LABELS cpu)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 600)
endfunction()
