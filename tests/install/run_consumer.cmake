# Script mode: install, configure the consumer, build it, run it. Any failure stops here.
# BUILD_DIR (the fp8q build), SOURCE_DIR (the consumer), WORK_DIR (scratch: prefix and build),
# GENERATOR; EXE: the consumer's program (default consumer).
if(NOT EXE)
  set(EXE consumer)
endif()
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/${EXE})
