# The layering of src/ made a build step: the folder of each concern, the targets it links (their
# folders), written to layers.txt; cmake/check_layers.cmake reads it and fails the build when a file
# includes a header of a concern that its target does not link, directly or through another.
set(KAGENT_LAYER_TARGETS
  common=kagent_common sandbox=kagent_sandbox spec=kagent_spec gpu=kagent_gpu compile=kagent_compile
  protocol=kagent_protocol profile=kagent_profile reference=kagent_reference eval=kagent_eval llm=kagent_llm
  model_tools=kagent_model_tools agent=kagent_agent report=kagent_report judge=kagent_judge bench=kagent_bench check=kagent_check
  serve=kagent_serve
  cli=kagent runner=kagent-runner)

# The kagent_* targets `target` links, directly or through another, into the variable `out`.
function(kagent_linked_targets target out)
  set(found "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    get_target_property(type ${t} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${t} LINK_LIBRARIES)
    endif()
    get_target_property(ilinks ${t} INTERFACE_LINK_LIBRARIES)
    foreach(l IN LISTS links ilinks)
      if(l MATCHES "^kagent_" AND NOT l IN_LIST found)
        list(APPEND found ${l})
        list(APPEND todo ${l})
      endif()
    endforeach()
  endwhile()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

set(layers_text "")
foreach(pair IN LISTS KAGENT_LAYER_TARGETS)
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 folder)
  list(GET pair 1 target)
  kagent_linked_targets(${target} linked)
  list(TRANSFORM linked REPLACE "^kagent_" "")
  list(REMOVE_ITEM linked core)
  list(JOIN linked "," allowed)
  string(APPEND layers_text "${folder}:${allowed}\n")
endforeach()
# The compile worker builds three sandbox files itself rather than link a kagent_* target.
string(APPEND layers_text "compile_worker:sandbox\n")
file(WRITE ${PROJECT_BINARY_DIR}/layers.txt "${layers_text}")

file(GLOB_RECURSE KAGENT_LAYER_FILES ${PROJECT_SOURCE_DIR}/src/*.cpp ${PROJECT_SOURCE_DIR}/src/*.hpp
     ${PROJECT_SOURCE_DIR}/src/*.cu ${PROJECT_SOURCE_DIR}/include/kagent/*.hpp)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/layers.stamp
  COMMAND ${CMAKE_COMMAND} -DLAYERS=${PROJECT_BINARY_DIR}/layers.txt -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${PROJECT_BINARY_DIR}/layers.stamp
  DEPENDS ${KAGENT_LAYER_FILES} ${PROJECT_BINARY_DIR}/layers.txt ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
  COMMENT "Checking that each concern includes only the concerns its target links"
  VERBATIM)
add_custom_target(kagent_layers DEPENDS ${PROJECT_BINARY_DIR}/layers.stamp)
# Every target links kagent_common, so every build runs the check first.
add_dependencies(kagent_common kagent_layers)
