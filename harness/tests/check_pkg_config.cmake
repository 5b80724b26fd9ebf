# Installs the build tree into WORK_DIR/prefix, then builds the make-based
# consumer (pkg_config_consumer/Makefile) with only `pkg-config verbfault`
# and runs it: it must list and open vfsim0 through the installed
# libverbfault.so. Fails on the first step that fails.
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
file(GLOB_RECURSE pc_files ${WORK_DIR}/prefix/*/verbfault.pc)
list(LENGTH pc_files found)
if(NOT found EQUAL 1)
  message(FATAL_ERROR "expected one installed verbfault.pc under ${WORK_DIR}/prefix, found: '${pc_files}'")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
get_filename_component(lib_dir ${pc_dir} DIRECTORY)
file(MAKE_DIRECTORY ${WORK_DIR}/build)
# What a user's Makefile sees: the installed prefix's flags, nothing else.
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
    pkg-config --cflags --libs verbfault)
if(NOT out MATCHES "-I${WORK_DIR}/prefix/[^ ]*include.*-lverbfault.*-libverbs")
  message(FATAL_ERROR "pkg-config --cflags --libs verbfault: '${out}': expected the prefix's include folder and -lverbfault before -libverbs")
endif()
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
    make -C ${WORK_DIR}/build -f ${MAKEFILE} SOURCE=${CONSUMER_SOURCE} OUT=${WORK_DIR}/build/consumer)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib_dir} ${WORK_DIR}/build/consumer)
if(NOT out MATCHES "vfsim0 port 1 active")
  message(FATAL_ERROR "the make-built consumer printed '${out}': expected vfsim0's port 1 active")
endif()
