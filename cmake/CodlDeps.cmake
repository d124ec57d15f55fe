# Finds CoDL's dependencies. Everything except a C++20 compiler is optional for the
# tools-only build; the full build requires the Debian packages listed in scripts/install-deps.sh.
find_package(Threads REQUIRED)
find_package(PkgConfig)

# liburing (optional for codl-inject / codl-victim; required for the io_uring injector)
set(CODL_HAVE_URING OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(URING IMPORTED_TARGET liburing)
  if(URING_FOUND)
    set(CODL_HAVE_URING ON)
  endif()
endif()
message(STATUS "codl: liburing ${CODL_HAVE_URING}")

# CUDA + NCCL (optional). /usr/local/cuda is where the build machines keep them.
set(CODL_HAVE_CUDA OFF)
set(CODL_HAVE_NCCL OFF)
if(CODL_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) SASS plus PTX for newer parts; Ampere SASS for common older boxes.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(CODL_HAVE_CUDA ON)
      find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
      if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
        set(CODL_HAVE_NCCL ON)
      endif()
    endif()
  endif()
endif()
message(STATUS "codl: CUDA ${CODL_HAVE_CUDA}, NCCL ${CODL_HAVE_NCCL}")

# gpusim (-DCODL_GPU_SIM=ON, tests and CI only): the CUDA runtime is gpusim's (gpusim/), linked
# in place of cudart_static; cuBLAS, NCCL and NVML are gpusim's libraries in <build>/gpusim/lib.
# The production code is unchanged.
set(CODL_CUDART CUDA::cudart_static)
if(CODL_GPU_SIM)
  if(NOT CODL_HAVE_CUDA)
    message(FATAL_ERROR "CODL_GPU_SIM needs the CUDA toolkit (nvcc and headers in /usr/local/cuda): "
                        "the stand-in replaces its libraries, not its compiler")
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY None)  # no real cudart next to gpusim's
  set(CODL_CUDART codl_gpusim)
  # dlopen("libnccl.so.2") from a binary of this tree finds gpusim's before the system's
  # (the binary's RUNPATH comes before ld.so.cache), with no LD_LIBRARY_PATH to set.
  list(APPEND CMAKE_BUILD_RPATH ${CMAKE_BINARY_DIR}/gpusim/lib)
endif()

if(NOT CODL_TOOLS_ONLY)
  find_package(Protobuf REQUIRED)
  find_package(gRPC CONFIG QUIET)
  if(NOT gRPC_FOUND)
    pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++)
    add_library(gRPC::grpc++ ALIAS PkgConfig::GRPCPP)
  endif()
  find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  find_package(absl REQUIRED)
  find_package(yaml-cpp REQUIRED)
  find_package(SQLite3 REQUIRED)
  find_package(spdlog REQUIRED)
  find_package(nlohmann_json REQUIRED)
  find_package(CLI11 CONFIG QUIET)
  find_package(prometheus-cpp CONFIG QUIET)
  pkg_check_modules(SYSTEMD IMPORTED_TARGET libsystemd)
  # RE2: linear-time matching for user-supplied progress patterns (never std::regex on input).
  pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
endif()

if(CODL_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND AND EXISTS /usr/src/googletest)
    add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
    add_library(GTest::gmock ALIAS gmock)
  endif()
  if(NOT TARGET GTest::gtest)
    message(FATAL_ERROR "The tests need GoogleTest/GoogleMock (Debian: libgtest-dev libgmock-dev; "
                        "scripts/install-deps.sh dev). Or configure with -DCODL_BUILD_TESTS=OFF.")
  endif()
  include(GoogleTest)
endif()

# codl_add_gtest(NAME SOURCES a.cc b.cc LIBS lib1 lib2 [LABELS l]) — one gtest binary, its cases
# discovered at test time. Label "integration" marks tests that spawn real processes.
# codl_test_source_dir(TARGET): CODL_TEST_SOURCE_DIR (the source tree's absolute path) for the
# tests that read files from it. Only these miss ccache in a clone at another path.
function(codl_test_source_dir target)
  target_compile_definitions(${target} PRIVATE CODL_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endfunction()

function(codl_add_gtest name)
  # SERIAL: the binary's tests assert what a neighbouring test could change (measured rates, CPU
  # shares, lease timing), so ctest runs each alone (RUN_SERIAL) while the other integration
  # tests run three at a time (scripts/sanitize.sh, CODL_INTEGRATION_JOBS).
  cmake_parse_arguments(ARG "SERIAL" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  if(CODL_SANITIZE)
    # GCC 12 at -O1 with ASan+UBSan reports the std::function members of libstdc++'s std::regex
    # as maybe-uninitialized (a false positive of the instrumented code; the tests use regexes).
    # Only here: the optimized build keeps the warning, as an error under CODL_WERROR.
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
    # The test code itself at -O0 (after the build's -O1, so it wins): a third less compile time
    # for the test binaries, measured on controller_test's heaviest unit (34.2 -> 21.9 CPU-s),
    # while the code under test keeps -O1. Instrumentation is the same at -O0.
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  endif()
  set(props TIMEOUT 600)
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  # Tests find the binaries through CODL_BIN_DIR. The few that need the source tree get
  # CODL_TEST_SOURCE_DIR compiled in on their own (codl_test_source_dir): an absolute path in
  # every test's flags made each clone in another folder miss ccache for every test unit.
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
    PROPERTIES ${props} ENVIRONMENT "CODL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
endfunction()
