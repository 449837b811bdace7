# A small static C program in the build tree's root (wavebox-shim, the wavebox launcher): built
# with musl when musl-gcc is there (no glibc start-up work at each exec, a fraction of the
# resident size), else static with the C compiler. musl has no Linux uAPI headers of its own:
# those it lacks come from the system's.
find_program(MUSL_GCC musl-gcc)
if(MUSL_GCC)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE WB_MULTIARCH
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(WB_UAPI -idirafter /usr/include)
  if(WB_MULTIARCH)
    list(APPEND WB_UAPI -idirafter /usr/include/${WB_MULTIARCH})
  endif()
endif()

# wb_static_c_program(TARGET OUTPUT_NAME SOURCE [HEADERS...])
function(wb_static_c_program target output source)
  if(MUSL_GCC)
    add_custom_command(
      OUTPUT ${CMAKE_BINARY_DIR}/${output}
      COMMAND ${MUSL_GCC} -std=gnu11 -O2 -Wall -Wextra -static ${WB_UAPI} -I${CMAKE_SOURCE_DIR}
              -o ${CMAKE_BINARY_DIR}/${output} ${source}
      DEPENDS ${source} ${ARGN}
      COMMENT "Building ${output} with musl")
    add_custom_target(${target} ALL DEPENDS ${CMAKE_BINARY_DIR}/${output})
  else()
    add_executable(${target} ${source})
    target_link_options(${target} PRIVATE -static)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${output} RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
endfunction()
