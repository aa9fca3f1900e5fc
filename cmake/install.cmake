# Installing towerflow (`cmake --install build [--prefix P]`): the static module
# libraries and their umbrella target `towerflow::towerflow`, exported for
# find_package(towerflow) (lib/cmake/towerflow), the headers a user includes
# (include/towerflow/..., the generated protobuf headers in
# include/towerflow/proto), `towerflow.pc` for pkg-config, and the `towerflow`
# command. tests/install/run.sh checks all of it from outside the tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TW_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/towerflow)
set(TW_MODULE_LIBRARIES tw_core tw_graph tw_device tw_kernels tw_runtime tw_data tw_train tw_dist)

install(TARGETS ${TW_MODULE_LIBRARIES} towerflow EXPORT towerflowTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS towerflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT towerflowTargets NAMESPACE towerflow:: DESTINATION ${TW_INSTALL_CMAKEDIR})

# Every header but the tests' helpers (towerflow.h still reaches into the
# modules: the public boundary of [api-install] is yet to be drawn).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/towerflow/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/towerflow
        FILES_MATCHING PATTERN "*.h"
        PATTERN "*test*" EXCLUDE
        PATTERN "cli" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/src/towerflow/data/proto/ ${PROJECT_BINARY_DIR}/src/towerflow/train/proto/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/towerflow/proto FILES_MATCHING PATTERN "*.pb.h")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/towerflowConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/towerflowConfig.cmake INSTALL_DESTINATION ${TW_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/towerflowConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/towerflowConfig.cmake ${PROJECT_BINARY_DIR}/towerflowConfigVersion.cmake
        DESTINATION ${TW_INSTALL_CMAKEDIR})

# pkg-config: static libraries, so every dependency is in Libs, in link order.
set(TW_PC_LIBS "")
foreach(lib tw_dist tw_train tw_data tw_runtime tw_kernels tw_device tw_graph tw_core)
  string(APPEND TW_PC_LIBS " -l${lib}")
endforeach()
set(TW_PC_DEPS "")
if(TOWERFLOW_HAVE_ISAL)
  string(APPEND TW_PC_DEPS " ${ISAL_LIBRARY}")
endif()
if(TOWERFLOW_HAVE_DNNL)
  string(APPEND TW_PC_DEPS " ${DNNL_LIBRARY} ${OpenMP_CXX_FLAGS}")
endif()
set(TW_PC_CFLAGS "")
if(TOWERFLOW_HAVE_CUDA)
  string(APPEND TW_PC_DEPS " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart ${CUDNN_LIBRARY} ${NCCL_LIBRARY}")
  foreach(dir ${CUDAToolkit_INCLUDE_DIRS} ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
    string(APPEND TW_PC_CFLAGS " -I${dir}")
  endforeach()
  string(APPEND TW_PC_CFLAGS " -DTOWERFLOW_HAVE_CUDA=1")
endif()
if(TOWERFLOW_HAVE_MPI)
  foreach(lib ${MPI_CXX_LIBRARIES})
    string(APPEND TW_PC_DEPS " ${lib}")
  endforeach()
endif()
if(TOWERFLOW_TCMALLOC_LIBRARY)
  string(APPEND TW_PC_DEPS " ${TOWERFLOW_TCMALLOC_LIBRARY}")
endif()
string(APPEND TW_PC_DEPS " -pthread")
foreach(lib ${CMAKE_DL_LIBS})
  string(APPEND TW_PC_DEPS " -l${lib}")
endforeach()
# From <libdir>/pkgconfig back to the prefix ("../.." for lib/pkgconfig).
file(RELATIVE_PATH TW_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/towerflow.pc.in ${PROJECT_BINARY_DIR}/towerflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/towerflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
