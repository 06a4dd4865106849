# Project-wide CMake helpers: warnings, CUDA detection, library-per-folder and test registration.

# -Wall -Wextra -Werror on project code only (never on third-party headers, which come in as SYSTEM).
function(gptrain_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -Werror=all-warnings>)
  # Sanitizer instrumentation makes GCC's flow-based warnings (maybe-uninitialized in <regex> and
  # <functional>) fire on code that is fine; the normal build keeps -Werror for real warnings.
  if(GPTRAIN_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error -Wno-maybe-uninitialized>)
  endif()
endfunction()

macro(gptrain_detect_cuda)
  set(GPTRAIN_HAVE_CUDA OFF)
  if(NOT GPTRAIN_CUDA STREQUAL "OFF")
    if(NOT CMAKE_CUDA_COMPILER)
      if(EXISTS /usr/local/cuda/bin/nvcc)
        set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
      else()
        find_program(CMAKE_CUDA_COMPILER nvcc)
      endif()
    endif()
    if(CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_ARCHITECTURES ${GPTRAIN_CUDA_ARCHS})
      enable_language(CUDA)
      # CMake 3.25 does not know nvcc 13's C++20 flag; teach it (CUDA_STANDARD follows CXX_STANDARD 20).
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      string(APPEND CMAKE_CUDA_FLAGS " --expt-relaxed-constexpr")
      find_package(CUDAToolkit REQUIRED)
      set(GPTRAIN_HAVE_CUDA ON)
      message(STATUS "gptrain: CUDA backend ON (archs ${GPTRAIN_CUDA_ARCHS}, ${CMAKE_CUDA_COMPILER})")
    elseif(GPTRAIN_CUDA STREQUAL "ON")
      message(FATAL_ERROR "GPTRAIN_CUDA=ON but no nvcc found: install the CUDA toolkit or set GPTRAIN_CUDA=OFF")
    else()
      message(STATUS "gptrain: no CUDA toolkit found, building the CPU backend only")
    endif()
  else()
    message(STATUS "gptrain: CUDA backend OFF (GPTRAIN_CUDA=OFF)")
  endif()
endmacro()

# One static library per top-level folder: every *.cpp under it but the CUDA code (*.cu and the
# CUDA-only host code *_cuda.cpp), which goes into the CUDA backend's shared libraries instead
# (gptrain_cuda_library).
function(gptrain_folder_library name)
  cmake_parse_arguments(ARG "" "EXCLUDE" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(ARG_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "${ARG_EXCLUDE}")
  endif()
  list(FILTER srcs EXCLUDE REGEX "_cuda\\.cpp$")
  if(NOT srcs)  # a folder with headers only so far
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  gptrain_warnings(${name})
  # Batches of files compiled as one (GPTRAIN_UNITY_BUILD): the JSON, fmt and standard-library templates
  # they share are parsed and instantiated once per batch instead of once per file. Names private to a
  # file (anonymous namespaces) must therefore differ across the files of a folder.
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${GPTRAIN_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 16)
  if(GPTRAIN_HAVE_CUDA)
    target_compile_definitions(${name} PUBLIC GPTRAIN_HAVE_CUDA=1)
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()

# A CUDA backend library, lib/lib<name>.so: every *.cu and *_cuda.cpp under the given folders. Executables
# load it on first use (core/common/plugin.h), so CPU runs never load the CUDA libraries. Its calls into
# the CPU code (logging, dtype names) bind to the executable's copy, which exports gptrain's symbols
# (gptrain_exports.list), so there is one logger and one of everything.
function(gptrain_cuda_library name)
  cmake_parse_arguments(ARG "" "" "DIRS;DEPS" ${ARGN})
  set(srcs)
  foreach(dir ${ARG_DIRS})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cu ${PROJECT_SOURCE_DIR}/${dir}/*_cuda.cpp)
    list(APPEND srcs ${found})
  endforeach()
  add_library(${name} SHARED ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_definitions(${name} PUBLIC GPTRAIN_HAVE_CUDA=1)
  set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
    CUDA_SEPARABLE_COMPILATION OFF)
  gptrain_warnings(${name})
endfunction()

# The executables defined in `dir` and its subdirectories.
function(gptrain_executables out dir)
  set(found)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    gptrain_executables(more ${sub})
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# Unit tests: every *.cpp in the calling folder becomes one Catch2 executable, each TEST_CASE a ctest
# entry with the given label.
function(gptrain_unit_tests label)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  get_filename_component(dir ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  set(exe ${label}_${dir})
  add_executable(${exe} ${srcs})
  # Batches of test files as for the libraries (Catch2's header is parsed once per batch, about halving the
  # tests' compile time); helpers private to a test file need names of their own across the folder.
  set_target_properties(${exe} PROPERTIES UNITY_BUILD ${GPTRAIN_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 8)
  target_link_libraries(${exe} PRIVATE gptrain_catch_main ${ARG_DEPS})
  gptrain_warnings(${exe})
  # --warn NoTests: a ctest entry whose name filter matches no TEST_CASE (e.g. a name CMake split at a
  # ';') fails instead of passing without running anything.
  catch_discover_tests(${exe} TEST_PREFIX "${dir}: " EXTRA_ARGS --warn NoTests PROPERTIES LABELS ${label}
    ENVIRONMENT "GPTRAIN_SRC=${PROJECT_SOURCE_DIR};GPTRAIN_BIN=${PROJECT_BINARY_DIR}/bin;GPTRAIN_SHARED=${GPTRAIN_SHARED_DIR}")
endfunction()

# Script tests: every *.sh in the calling folder is one ctest entry with the given label. Scripts get
# GPTRAIN_SRC, GPTRAIN_BIN (built executables), GPTRAIN_SHARED (../shared), GPTRAIN_PYTHON (reference venv)
# and a fresh scratch directory GPTRAIN_TMP. The duration a script's header states ("~40 s", "~1-2 min")
# becomes its COST, so that a fresh build directory (no timings of earlier runs) starts the long scripts
# first and the many short tests fill the gaps, instead of a long one running alone at the end.
function(gptrain_script_tests label)
  file(GLOB scripts CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.sh)
  foreach(s ${scripts})
    get_filename_component(n ${s} NAME_WE)
    set(cost 5)
    file(STRINGS ${s} head LIMIT_COUNT 40 REGEX "~[0-9.]+(-[0-9.]+)? ?(s|min)[^a-z]")
    if(head)
      list(GET head 0 line)
      string(REGEX MATCH "~([0-9.]+)(-([0-9.]+))? ?(s|min)" m "${line}")
      set(cost ${CMAKE_MATCH_1})
      if(CMAKE_MATCH_3)
        set(cost ${CMAKE_MATCH_3})
      endif()
      if(CMAKE_MATCH_4 STREQUAL "min")
        string(REGEX REPLACE "\\..*" "" whole "${cost}")  # math() takes integers: round 1.5 up to 2
        if(NOT whole STREQUAL cost)
          math(EXPR whole "${whole} + 1")
        endif()
        math(EXPR cost "${whole} * 60")
      endif()
    endif()
    add_test(NAME "${label}: ${n}" COMMAND bash ${s})
    set_tests_properties("${label}: ${n}" PROPERTIES LABELS ${label} TIMEOUT 900 COST ${cost}
      ENVIRONMENT "GPTRAIN_SRC=${PROJECT_SOURCE_DIR};GPTRAIN_BIN=${PROJECT_BINARY_DIR}/bin;GPTRAIN_SHARED=${GPTRAIN_SHARED_DIR};GPTRAIN_PYTHON=${GPTRAIN_PYTHON};GPTRAIN_TMP=${PROJECT_BINARY_DIR}/test-tmp/${label}-${n}"
      SKIP_RETURN_CODE 77)
  endforeach()
endfunction()
