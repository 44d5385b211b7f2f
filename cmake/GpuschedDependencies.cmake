# Every dependency comes from Debian 12's packages (see README.md); nothing is downloaded.
#
# The policy families need only header-only packages: {fmt} in its header-only form (the
# fmt::fmt-header-only target, FMT_HEADER_ONLY), Boost's headers (Boost.Graph's adjacency_list and
# push_relabel_max_flow are templates; nothing of ours calls read_graphviz/read_graphml, which are
# the only parts of Boost.Graph with a compiled library, and nothing uses Boost.Regex) and Eigen.
# nlohmann-json is needed by the readers (io), CLP and threads by the simulator (sim), CLI11 by the
# tool. The same split is repeated per component in cmake/gpuschedConfig.cmake.in.
include(GNUInstallDirs)
find_package(fmt REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
if(GPUSCHED_WITH_IO)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(yaml-cpp 0.7 REQUIRED)  # Kubernetes objects in YAML (libyaml-cpp-dev)
else()
  find_package(nlohmann_json 3.10 QUIET)
endif()
if(GPUSCHED_WITH_SIM)
  find_package(Threads REQUIRED)
  # COIN-OR CLP (LP solver for the packing lower bound in the simulator), through pkg-config.
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(CLP REQUIRED IMPORTED_TARGET GLOBAL clp)
endif()
if(GPUSCHED_BUILD_TOOL)
  find_package(CLI11 REQUIRED)
endif()
if(GPUSCHED_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(GPUSCHED_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
