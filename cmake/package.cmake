# A Debian package of the installed tree (`cd build && cpack -G DEB`):
# package/towerflow_<version>_<arch>.deb with the `towerflow` tool,
# libtowerflow.so and the static archives, the public headers, the CMake
# package and towerflow.pc, under /usr. tests/install/package.sh builds it,
# reads its control fields, unpacks it into an empty root and runs the tool
# and a program built against it from there.
#
# Dependencies: dpkg-shlibdeps declares every shared library the tool and the
# library link (libprotobuf, zlib, ISA-L, oneDNN, OpenMPI, tcmalloc, libstdc++,
# ...) with Debian's version constraints. OpenBLAS is loaded at run time
# (kernels/blas.cc), so no ELF names it: it is declared here. A CUDA build also
# links the CUDA runtime, cuDNN and NCCL, which Debian does not carry (NVIDIA's
# packages or installer provide them): dpkg-shlibdeps finds no package for them
# and the package does not declare them (the README says so).
set(CPACK_PACKAGE_NAME towerflow)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Training neural networks on GPUs and CPU cores from TFRecord data")
set(CPACK_PACKAGE_DESCRIPTION
    "towerflow trains neural networks from TFRecord data on one or several GPUs or CPU cores: a deferred dataflow graph with symbolic gradients, soft placement, queue-based input pipelines, towers with averaged gradients, and multi-process jobs over MPI. This package holds the towerflow command, the C++ library (static and shared), its public headers, its CMake package and its pkg-config file.")
set(CPACK_PACKAGE_CONTACT "towerflow developers <towerflow@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for libtowerflow.so and the ldconfig trigger that goes with it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread | libopenblas0")
# Building against the headers needs the compilers' and protobuf's development
# files; mpirun launches multi-process jobs.
set(TW_DEB_RECOMMENDS "g++ (>= 4:12), cmake (>= 3.25), pkg-config, libprotobuf-dev, zlib1g-dev")
if(TOWERFLOW_HAVE_MPI)
  string(APPEND TW_DEB_RECOMMENDS ", openmpi-bin, libopenmpi-dev")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${TW_DEB_RECOMMENDS}")
# gzip: the CLI is large, and xz takes minutes on two cores for little gain.
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
