# Installing towerflow (`cmake --install build [--prefix P]`): the static module
# libraries, libtowerflow.so (when built: src/towerflow/CMakeLists.txt) and
# the umbrella target `towerflow::towerflow`, exported for
# find_package(towerflow) (lib/cmake/towerflow), the public headers
# (include/towerflow/...), `towerflow.pc` for pkg-config, and the `towerflow`
# command with its man page. tests/install/run.sh checks all of it from
# outside the tree; cmake/package.cmake makes a .deb of it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TW_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/towerflow)
set(TW_MODULE_LIBRARIES tw_core tw_graph tw_device tw_kernels tw_runtime tw_data tw_train tw_dist)

install(TARGETS ${TW_MODULE_LIBRARIES} towerflow EXPORT towerflowTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET towerflow_shared)
  # libtowerflow.so.0.1.0, its SONAME link libtowerflow.so.0.1 and the
  # development link libtowerflow.so.
  install(TARGETS towerflow_shared EXPORT towerflowTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS towerflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET towerflow_man)
  install(FILES ${PROJECT_BINARY_DIR}/man/towerflow.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
install(EXPORT towerflowTargets NAMESPACE towerflow:: DESTINATION ${TW_INSTALL_CMAKEDIR})

# The public headers: include/towerflow/, nothing else (tests/install/run.sh
# checks that each compiles alone against the install tree, which holds no
# internal header).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/towerflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/towerflowConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/towerflowConfig.cmake INSTALL_DESTINATION ${TW_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/towerflowConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/towerflowConfig.cmake ${PROJECT_BINARY_DIR}/towerflowConfigVersion.cmake
        DESTINATION ${TW_INSTALL_CMAKEDIR})

# pkg-config: the form towerflow::towerflow has. Shared: -ltowerflow, its own
# dependencies private (`pkg-config --static` lists them). Static: every module
# archive and every dependency in Libs, in link order.
set(TW_PC_DEPS "")
if(TOWERFLOW_HAVE_ISAL)
  string(APPEND TW_PC_DEPS " ${ISAL_LIBRARY}")
endif()
if(TOWERFLOW_HAVE_DNNL)
  string(APPEND TW_PC_DEPS " ${DNNL_LIBRARY} ${OpenMP_CXX_FLAGS}")
endif()
if(TOWERFLOW_HAVE_CUDA)
  string(APPEND TW_PC_DEPS " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart ${CUDNN_LIBRARY} ${NCCL_LIBRARY}")
endif()
if(TOWERFLOW_HAVE_MPI)
  foreach(lib ${MPI_CXX_LIBRARIES})
    string(APPEND TW_PC_DEPS " ${lib}")
  endforeach()
endif()
string(APPEND TW_PC_DEPS " -pthread")
foreach(lib ${CMAKE_DL_LIBS})
  string(APPEND TW_PC_DEPS " -l${lib}")
endforeach()
if(BUILD_SHARED_LIBS)
  set(TW_PC_LIBS " -ltowerflow")
  set(TW_PC_REQUIRES "Requires.private: protobuf zlib")
  set(TW_PC_LIBS_PRIVATE "Libs.private:${TW_PC_DEPS}")
else()
  set(TW_PC_LIBS "")
  foreach(lib tw_dist tw_train tw_data tw_runtime tw_kernels tw_device tw_graph tw_core)
    string(APPEND TW_PC_LIBS " -l${lib}")
  endforeach()
  string(APPEND TW_PC_LIBS "${TW_PC_DEPS}")
  if(TOWERFLOW_TCMALLOC_LIBRARY)
    string(APPEND TW_PC_LIBS " ${TOWERFLOW_TCMALLOC_LIBRARY}")
  endif()
  set(TW_PC_REQUIRES "Requires: protobuf zlib")
  set(TW_PC_LIBS_PRIVATE "")
endif()
# From <libdir>/pkgconfig back to the prefix ("../.." for lib/pkgconfig).
file(RELATIVE_PATH TW_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/towerflow.pc.in ${PROJECT_BINARY_DIR}/towerflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/towerflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
