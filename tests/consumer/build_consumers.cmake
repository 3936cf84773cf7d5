# cmake -DSRC=<checkout> -DBIN=<build> -DWORK=<dir> -DARCHS=<a,b> -DNVCC=<nvcc> -DCMAKE=<cmake>
#       -P build_consumers.cmake
# Builds tests/consumer three ways, each into WORK/<kind>/consumer:
#   installed  find_package(ftkernels) against `cmake --install` of BIN
#   subdir     add_subdirectory of the checkout
#   nvcc       one bare nvcc line with two -I flags
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
endfunction()

string(REPLACE "," ";" archs "${ARCHS}")
list(GET archs 0 first_arch)
file(REMOVE_RECURSE ${WORK})

run(${CMAKE} --install ${BIN} --prefix ${WORK}/prefix)
foreach(kind installed subdir)
  if(kind STREQUAL "installed")
    set(how -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  else()
    set(how -DFT_SOURCE_DIR=${SRC})
  endif()
  run(${CMAKE} -S ${SRC}/tests/consumer -B ${WORK}/build-${kind} ${how}
      "-DCMAKE_CUDA_ARCHITECTURES=${archs}" -DCMAKE_CUDA_COMPILER=${NVCC} -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE} --build ${WORK}/build-${kind})
  file(MAKE_DIRECTORY ${WORK}/${kind})
  file(COPY_FILE ${WORK}/build-${kind}/consumer ${WORK}/${kind}/consumer)
  message(STATUS "consumer (${kind}): built")
endforeach()

file(MAKE_DIRECTORY ${WORK}/nvcc)
run(${NVCC} -std=c++17 -O2 -arch=sm_${first_arch} -I ${SRC}/include -I ${SRC}/generated
    ${SRC}/tests/consumer/main.cu -o ${WORK}/nvcc/consumer)
message(STATUS "consumer (nvcc -I include -I generated): built")
