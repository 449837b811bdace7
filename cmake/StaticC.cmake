# A small static C program in the build tree (wavebox-shim, the wavebox launcher): built with
# musl when musl-gcc is there (no glibc start-up work at each exec, a fraction of the resident
# size), else static with the C compiler. musl has no Linux uAPI headers of its own: those it
# lacks come from the system's.
find_program(MUSL_GCC musl-gcc)
if(MUSL_GCC)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE WB_MULTIARCH
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(WB_UAPI -idirafter /usr/include)
  if(WB_MULTIARCH)
    list(APPEND WB_UAPI -idirafter /usr/include/${WB_MULTIARCH})
  endif()
endif()

# wb_static_c_program(TARGET name OUTPUT path-in-build-tree SOURCES file... [DEPENDS headers...]
#                     [DEFINES NAME=VALUE...] [NOT_EXECUTABLE])
# NOT_EXECUTABLE: the file is left mode 0644 (one only to install, with install(PROGRAMS)).
function(wb_static_c_program)
  cmake_parse_arguments(A "NOT_EXECUTABLE" "TARGET;OUTPUT" "SOURCES;DEPENDS;DEFINES" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/${A_OUTPUT})
  set(mode_cmd)
  if(A_NOT_EXECUTABLE)
    set(mode_cmd COMMAND chmod 0644 ${out})
  endif()
  get_filename_component(out_dir ${out} DIRECTORY)
  get_filename_component(out_name ${out} NAME)
  if(MUSL_GCC)
    set(defs)
    foreach(d ${A_DEFINES})
      list(APPEND defs -D${d})
    endforeach()
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND ${MUSL_GCC} -std=gnu11 -O2 -Wall -Wextra -static ${WB_UAPI} -I${CMAKE_SOURCE_DIR} ${defs} -o ${out}
              ${A_SOURCES} ${mode_cmd}
      DEPENDS ${A_SOURCES} ${A_DEPENDS}
      COMMENT "Building ${A_OUTPUT} with musl"
      VERBATIM)
    add_custom_target(${A_TARGET} ALL DEPENDS ${out})
  else()
    add_executable(${A_TARGET} ${A_SOURCES})
    target_compile_definitions(${A_TARGET} PRIVATE ${A_DEFINES})
    target_link_options(${A_TARGET} PRIVATE -static)
    set_target_properties(${A_TARGET} PROPERTIES OUTPUT_NAME ${out_name} RUNTIME_OUTPUT_DIRECTORY ${out_dir})
    if(A_NOT_EXECUTABLE)
      add_custom_command(TARGET ${A_TARGET} POST_BUILD COMMAND chmod 0644 ${out} VERBATIM)
    endif()
  endif()
endfunction()
