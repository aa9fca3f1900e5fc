# Helpers shared by every module: tw_library, tw_test.

# No multiply-add becomes an FMA behind the code's back, so that a CPU kernel
# computes the same bits whichever instruction set it was compiled for
# (kernels/internal/cpu_clones.h; the baseline x86-64 build has no FMA).
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)

# -Wno-restrict: GCC 12 reports false overlaps inside std::string at -O3 (GCC bug
# 105651); the warning is useless on this code and would break -Werror builds.
# (GCC only: clang does not know the flag and warns about it.)
set(TW_CXX_WARNINGS -Wall -Wextra -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND TW_CXX_WARNINGS -Wno-restrict)
endif()
if(TOWERFLOW_WERROR)
  list(APPEND TW_CXX_WARNINGS -Werror)
endif()
# nvcc passes host-compiler warnings through -Xcompiler; its own warnings are
# errors in CI too (-Werror all-warnings).
string(REPLACE ";" "," TW_CUDA_HOST_WARNINGS "${TW_CXX_WARNINGS}")
set(TW_WARNINGS "")
foreach(flag ${TW_CXX_WARNINGS})
  list(APPEND TW_WARNINGS "$<$<COMPILE_LANGUAGE:CXX>:${flag}>")
endforeach()
if(TOWERFLOW_HAVE_CUDA)
  list(APPEND TW_WARNINGS "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${TW_CUDA_HOST_WARNINGS}>")
  if(TOWERFLOW_WERROR)
    list(APPEND TW_WARNINGS "$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>")
  endif()
endif()
# Sanitizer findings fail: UBSan aborts on the first report instead of printing
# and going on (-fno-sanitize-recover), so a test or fuzz run under it cannot pass
# with undefined behaviour.
if(TOWERFLOW_SANITIZE)
  add_compile_options(-fsanitize=${TOWERFLOW_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TOWERFLOW_SANITIZE})
  if(TOWERFLOW_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
# TOWERFLOW_FUZZ: every library carries libFuzzer's coverage instrumentation
# (fuzzer-no-link) and ASan+UBSan; the fuzz targets link libFuzzer itself.
if(TOWERFLOW_FUZZ)
  if(TOWERFLOW_SANITIZE MATCHES "thread")
    message(FATAL_ERROR "TOWERFLOW_FUZZ builds with address,undefined; it cannot use TOWERFLOW_SANITIZE=thread")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# tw_library(NAME SRCS ... DEPS ...): one static library per module; DEPS are the
# only modules it may use, so the linker enforces the one-way dependencies.
function(tw_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  # include/: the public headers (installed); src/: the internal ones, for
  # towerflow's own modules, tests, benchmarks and tool (never installed).
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                            $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
                                            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_options(${name} PRIVATE ${TW_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  # Position-independent, and every symbol hidden but those the public headers
  # declare (each wraps its declarations in `#pragma GCC visibility
  # push(default)`): the same objects make the static archives and
  # libtowerflow.so, whose dynamic symbol table is then the public API alone.
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
                                           CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()

# tw_test(NAME SRCS ... DEPS ... LABELS ...): a GoogleTest binary registered with CTest.
function(tw_test name)
  if(NOT TOWERFLOW_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  # CUDA tests (*_cuda_test.cc) carry the label `cuda`; they skip without a GPU.
  if(NOT ARG_LABELS AND name MATCHES "_cuda_test$")
    set(ARG_LABELS cuda)
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_compile_options(${name} PRIVATE ${TW_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(NOT ARG_LABELS)
    set(ARG_LABELS cpu)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 600)
  # `cpu` tests see no GPU, on a GPU machine too: they test the CPU and the
  # fake GPUs, which cannot exist where a CUDA GPU is visible (fake_gpu.cc),
  # and a visible GPU would take every op that has a CUDA kernel.
  if("cpu" IN_LIST ARG_LABELS)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
  endif()
endfunction()
