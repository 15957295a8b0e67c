# The install_tree test: install the build into PREFIX, check the programs and the data are there,
# then ask the installed kagent where it reads its data (kagent doctor names the reference server's
# folder): PREFIX/share/kagent, not the source tree.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} --prefix ${PREFIX} failed (${rc})")
endif()
foreach(f bin/kagent bin/kagent-runner bin/kagent-compile bin/kagent-jail-init bin/kagent-sandbox-exec
          share/kagent/tools/kagent_ref/server.py share/kagent/prompts/system.md share/kagent/prompts/task.md)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
  endif()
endforeach()
execute_process(COMMAND env KAGENT_CACHE_DIR=${PREFIX}/cache ${PREFIX}/bin/kagent doctor
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}${err}" "${PREFIX}/share/kagent/tools" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the installed kagent does not look in ${PREFIX}/share/kagent/tools:\n${out}${err}")
endif()
message(STATUS "installed into ${PREFIX}; its kagent reads ${PREFIX}/share/kagent")
