# ftkernels_generate(<target> FAMILY <family> DTYPES <d>... [HEAD_SIZES <D>...] [KS <K>...]
#                    [WIDTHS <bytes>...] [OUTPUT_DIR <dir>])
#
# Generates ftkernels variants that the default package does not ship (a new dtype or
# copy width, head size or top-K value) into the build tree and
# makes <target>, an INTERFACE library that puts them on the include path and links
# ftkernels::ftkernels. The headers are regenerated whenever the generator, a template
# or the arguments change (add_custom_command DEPENDS on them), never by hand.
#
#   ftkernels_generate(my_norm FAMILY norm DTYPES bf16 WIDTHS 8)
#   ftkernels_generate(my_attn FAMILY attention DTYPES fp16 HEAD_SIZES 72 80)
#   ftkernels_generate(my_topk FAMILY topk DTYPES fp32 KS 40 128)
#   target_link_libraries(app PRIVATE my_norm)   # then #include "ft/norm_w8_bf16.cuh"
if(NOT DEFINED FTKERNELS_GENERATOR)
  set(FTKERNELS_GENERATOR "${CMAKE_CURRENT_LIST_DIR}/../ftgen.py")
endif()
get_filename_component(FTKERNELS_GENERATOR "${FTKERNELS_GENERATOR}" ABSOLUTE)
# a global property, so the function finds the generator from any directory scope (the
# including scope may be a subdirectory, e.g. ftkernels added with add_subdirectory)
set_property(GLOBAL PROPERTY FTKERNELS_GENERATOR_PATH "${FTKERNELS_GENERATOR}")

function(ftkernels_generate target)
  cmake_parse_arguments(ARG "" "FAMILY;OUTPUT_DIR" "DTYPES;WIDTHS;HEAD_SIZES;KS" ${ARGN})
  if(NOT ARG_FAMILY OR NOT ARG_DTYPES)
    message(FATAL_ERROR "ftkernels_generate(${target}): FAMILY and DTYPES are required")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${target}_gen")
  endif()
  find_package(Python3 3.11 REQUIRED COMPONENTS Interpreter)
  get_property(generator GLOBAL PROPERTY FTKERNELS_GENERATOR_PATH)
  string(REPLACE ";" "," dtypes "${ARG_DTYPES}")
  set(args --family ${ARG_FAMILY} --dtype ${dtypes})
  if(ARG_HEAD_SIZES)
    string(REPLACE ";" "," head_sizes "${ARG_HEAD_SIZES}")
    list(APPEND args --head-size ${head_sizes})
  endif()
  if(ARG_KS)
    string(REPLACE ";" "," ks "${ARG_KS}")
    list(APPEND args --k ${ks})
  endif()
  if(ARG_WIDTHS)
    string(REPLACE ";" "," widths "${ARG_WIDTHS}")
    list(APPEND args --width ${widths})
  endif()
  # the generator's one naming function says which files these arguments make
  execute_process(COMMAND ${Python3_EXECUTABLE} ${generator} ${args} --print-outputs
                  OUTPUT_VARIABLE outputs ERROR_VARIABLE err RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ftkernels_generate(${target}): ${err}")
  endif()
  string(REPLACE "\n" ";" outputs "${outputs}")
  list(TRANSFORM outputs PREPEND "${ARG_OUTPUT_DIR}/")
  get_filename_component(gen_dir "${generator}" DIRECTORY)
  file(GLOB templates CONFIGURE_DEPENDS "${gen_dir}/../templates/*.j2")
  add_custom_command(OUTPUT ${outputs}
    COMMAND ${Python3_EXECUTABLE} ${generator} ${args} --out ${ARG_OUTPUT_DIR}
    DEPENDS ${generator} ${templates}
    COMMENT "ftkernels: generating ${ARG_FAMILY} ${ARG_DTYPES} ${ARG_HEAD_SIZES} ${ARG_KS} ${ARG_WIDTHS}"
    VERBATIM)
  add_custom_target(${target}_headers DEPENDS ${outputs})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_headers)
  target_include_directories(${target} INTERFACE "${ARG_OUTPUT_DIR}")
  if(TARGET ftkernels::ftkernels)
    target_link_libraries(${target} INTERFACE ftkernels::ftkernels)
  endif()
endfunction()
