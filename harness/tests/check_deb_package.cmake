# `cpack -G DEB` of the build tree, then the .deb installed with dpkg into
# a scratch root (its own dpkg database: dpkg --root --unpack registers the
# package and places its files; configure would only run ldconfig), then
# the installed programs run from there: the make-built pkg-config consumer
# on vfsim0, and `verbfault run` of the installed sample. Fails on the
# first step that fails.
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
run(${CMAKE_CPACK_COMMAND} -G DEB -B ${WORK_DIR}/package --config ${BUILD_DIR}/CPackConfig.cmake)
file(GLOB deb ${WORK_DIR}/package/verbfault_*.deb)
list(LENGTH deb found)
if(NOT found EQUAL 1)
  message(FATAL_ERROR "cpack -G DEB: expected one verbfault_*.deb in ${WORK_DIR}/package, found '${deb}'")
endif()
run(dpkg-deb --field ${deb} Depends)
if(NOT out MATCHES "libibverbs1" OR NOT out MATCHES "libyaml-cpp")
  message(FATAL_ERROR "${deb}: Depends '${out}': expected libibverbs1 and libyaml-cpp (dpkg-shlibdeps)")
endif()

set(root ${WORK_DIR}/root)
file(MAKE_DIRECTORY ${root}/var/lib/dpkg/info ${root}/var/lib/dpkg/updates)
file(TOUCH ${root}/var/lib/dpkg/status)
# The scratch database has none of the dependencies (this machine has them).
run(dpkg --root=${root} --force-not-root --force-depends --unpack ${deb})
run(dpkg --root=${root} --status verbfault)
if(NOT out MATCHES "Status: install ok unpacked")
  message(FATAL_ERROR "dpkg --root=${root} --status verbfault: '${out}': expected the package unpacked")
endif()
foreach(file bin/verbfault bin/sample_rc include/verbfault/verbfault.h)
  if(NOT EXISTS ${root}/usr/${file})
    message(FATAL_ERROR "the .deb did not install /usr/${file}")
  endif()
endforeach()
file(GLOB_RECURSE pc ${root}/usr/*/verbfault.pc)
get_filename_component(pc_dir "${pc}" DIRECTORY)
get_filename_component(lib_dir "${pc_dir}" DIRECTORY)

file(MAKE_DIRECTORY ${WORK_DIR}/consumer)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
    make -C ${WORK_DIR}/consumer -f ${MAKEFILE} SOURCE=${CONSUMER_SOURCE} OUT=${WORK_DIR}/consumer/consumer)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib_dir} ${WORK_DIR}/consumer/consumer)
if(NOT out MATCHES "vfsim0 port 1 active")
  message(FATAL_ERROR "the consumer built against the .deb printed '${out}': expected vfsim0's port 1 active")
endif()
# The installed CLI finds the installed libverbfault.so beside it.
run(${root}/usr/bin/verbfault run --seed 7 -- ${root}/usr/bin/sample_rc)
if(NOT out MATCHES "sample_rc: OK" OR NOT err MATCHES "trace hash")
  message(FATAL_ERROR "the installed verbfault run of the installed sample: '${out}${err}': expected 'sample_rc: OK' and its trace hash")
endif()
