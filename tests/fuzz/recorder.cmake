# The recorder's parsers of what traced processes give it (issue 16):
#   fuzz_recorder_elf   elf_info.c, unwind_writer.c's reduced image and
#                       needed_libs.c's DT_NEEDED reader, on one ELF file
#   fuzz_recorder_maps  /proc/PID/maps lines (proc_maps.c)
#   fuzz_recorder_python the CPython facts from the interpreter's file and
#                       the process's memory (python_parse.c)
#   fuzz_recorder_proc  /proc/PID/environ's launcher variables, stat and
#                       status (proc_text.c)
# These files need libelf but not libbpf, so they are built whether or not
# the recorder is (the sanitizer and fuzz builds have no recorder).
# The seeds are built, never committed: make_recorder_seeds writes crafted
# ELF files (elf_craft.h), copies of seed_lib.so and unwind_target (made by
# the compiler and linker here) and maps files into the build tree.
# (seed_python.so, a stand-in interpreter file, is built for
# corpus_recorder_python.)
# Always: ctest unit.fuzz_recorder_{elf,maps,python,proc}_replay (label
# unit), over those seeds and corpus/recorder_* (what fuzz_long.sh kept, and
# hand-written seeds) when present.  With -DFLIGHTREC_FUZZ=ON and clang:
# fuzz.recorder_{elf,maps,python,proc} (label fuzz), each a quarter of
# FLIGHTREC_FUZZ_SECONDS: small parsers, and CI's fuzz time stays within its
# budget.
pkg_check_modules(FUZZ_REC_LIBELF REQUIRED IMPORTED_TARGET libelf)
set(REC_DIR ${PROJECT_SOURCE_DIR}/recorder)
set(REC_ELF_SOURCES ${REC_DIR}/inspect/elf_info.c ${REC_DIR}/symbols/unwind_writer.c
  ${REC_DIR}/attach/needed_libs.c ${REC_DIR}/inspect/safe_open.c)
set(REC_ELF_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_elf)
set(REC_MAPS_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_maps)
# what fuzz_long.sh found and kept (committed, minimized), replayed too
set(REC_ELF_KEPT ${CMAKE_CURRENT_SOURCE_DIR}/corpus/recorder_elf)
set(REC_MAPS_KEPT ${CMAKE_CURRENT_SOURCE_DIR}/corpus/recorder_maps)
set(REC_PYTHON_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_python)
set(REC_PYTHON_KEPT ${CMAKE_CURRENT_SOURCE_DIR}/corpus/recorder_python)
set(REC_PROC_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_proc) # none built
set(REC_PROC_KEPT ${CMAKE_CURRENT_SOURCE_DIR}/corpus/recorder_proc)
set(REC_ELF_REPLAY ${REC_ELF_CORPUS})
set(REC_MAPS_REPLAY ${REC_MAPS_CORPUS})
if(EXISTS ${REC_ELF_KEPT})
  list(APPEND REC_ELF_REPLAY ${REC_ELF_KEPT})
endif()
if(EXISTS ${REC_MAPS_KEPT})
  list(APPEND REC_MAPS_REPLAY ${REC_MAPS_KEPT})
endif()

# A real shared object: DT_NEEDED, DT_RUNPATH $ORIGIN, .debug_frame.
add_library(fuzz_seed_lib SHARED seed_lib.c)
target_compile_options(fuzz_seed_lib PRIVATE -O1 -g -fno-asynchronous-unwind-tables
  -fno-sanitize=all)
target_link_options(fuzz_seed_lib PRIVATE -fno-sanitize=all)
set_target_properties(fuzz_seed_lib PROPERTIES BUILD_RPATH "\$ORIGIN/lib")

add_executable(make_recorder_seeds make_recorder_seeds.c)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${REC_ELF_CORPUS} ${REC_MAPS_CORPUS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REC_ELF_CORPUS} ${REC_MAPS_CORPUS}
  COMMAND make_recorder_seeds ${REC_ELF_CORPUS} ${REC_MAPS_CORPUS}
    $<TARGET_FILE:fuzz_seed_lib> $<TARGET_FILE:unwind_target>
  COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder.stamp
  DEPENDS make_recorder_seeds fuzz_seed_lib unwind_target
  COMMENT "Writing the recorder fuzz seeds")
add_custom_target(corpus_recorder ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder.stamp)

add_library(fuzz_seed_python SHARED seed_python.c)
target_compile_options(fuzz_seed_python PRIVATE -O1 -fno-sanitize=all)
target_link_options(fuzz_seed_python PRIVATE -fno-sanitize=all)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_python.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${REC_PYTHON_CORPUS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REC_PYTHON_CORPUS}
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:fuzz_seed_python>
    ${REC_PYTHON_CORPUS}/seed_python.so
  COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_python.stamp
  DEPENDS fuzz_seed_python
  COMMENT "Writing the CPython reader's fuzz seed")
add_custom_target(corpus_recorder_python DEPENDS
  ${CMAKE_CURRENT_BINARY_DIR}/corpus_recorder_python.stamp)
add_dependencies(corpus_recorder corpus_recorder_python)

add_executable(fuzz_recorder_elf_replay fuzz_recorder_elf.c replay_main.c ${REC_ELF_SOURCES})
target_include_directories(fuzz_recorder_elf_replay PRIVATE ${REC_DIR}
  ${PROJECT_SOURCE_DIR}/bpf)
target_link_libraries(fuzz_recorder_elf_replay PRIVATE frec_format PkgConfig::FUZZ_REC_LIBELF)
add_dependencies(fuzz_recorder_elf_replay corpus_recorder)
add_test(NAME unit.fuzz_recorder_elf_replay COMMAND fuzz_recorder_elf_replay ${REC_ELF_REPLAY})
set_tests_properties(unit.fuzz_recorder_elf_replay PROPERTIES LABELS unit)

add_executable(fuzz_recorder_maps_replay fuzz_recorder_maps.c replay_main.c ${REC_DIR}/inspect/proc_maps.c)
target_include_directories(fuzz_recorder_maps_replay PRIVATE ${REC_DIR})
add_dependencies(fuzz_recorder_maps_replay corpus_recorder)
add_test(NAME unit.fuzz_recorder_maps_replay COMMAND fuzz_recorder_maps_replay ${REC_MAPS_REPLAY})
set_tests_properties(unit.fuzz_recorder_maps_replay PROPERTIES LABELS unit)

add_executable(fuzz_recorder_python_replay fuzz_recorder_python.c replay_main.c
  ${REC_DIR}/inspect/python_parse.c)
target_include_directories(fuzz_recorder_python_replay PRIVATE ${REC_DIR}
  ${PROJECT_SOURCE_DIR}/bpf)
target_link_libraries(fuzz_recorder_python_replay PRIVATE PkgConfig::FUZZ_REC_LIBELF)
add_dependencies(fuzz_recorder_python_replay corpus_recorder)
add_test(NAME unit.fuzz_recorder_python_replay COMMAND fuzz_recorder_python_replay
  ${REC_PYTHON_CORPUS} ${REC_PYTHON_KEPT})
set_tests_properties(unit.fuzz_recorder_python_replay PROPERTIES LABELS unit)

add_executable(fuzz_recorder_proc_replay fuzz_recorder_proc.c replay_main.c
  ${REC_DIR}/inspect/proc_text.c)
target_include_directories(fuzz_recorder_proc_replay PRIVATE ${REC_DIR})
add_test(NAME unit.fuzz_recorder_proc_replay COMMAND fuzz_recorder_proc_replay ${REC_PROC_KEPT})
set_tests_properties(unit.fuzz_recorder_proc_replay PROPERTIES LABELS unit)

if(FLIGHTREC_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_recorder_elf fuzz_recorder_elf.c ${REC_ELF_SOURCES})
  target_include_directories(fuzz_recorder_elf PRIVATE ${REC_DIR} ${PROJECT_SOURCE_DIR}/bpf)
  target_link_libraries(fuzz_recorder_elf PRIVATE frec_format PkgConfig::FUZZ_REC_LIBELF)
  add_executable(fuzz_recorder_maps fuzz_recorder_maps.c ${REC_DIR}/inspect/proc_maps.c)
  target_include_directories(fuzz_recorder_maps PRIVATE ${REC_DIR})
  add_executable(fuzz_recorder_python fuzz_recorder_python.c ${REC_DIR}/inspect/python_parse.c)
  target_include_directories(fuzz_recorder_python PRIVATE ${REC_DIR} ${PROJECT_SOURCE_DIR}/bpf)
  target_link_libraries(fuzz_recorder_python PRIVATE PkgConfig::FUZZ_REC_LIBELF)
  add_executable(fuzz_recorder_proc fuzz_recorder_proc.c ${REC_DIR}/inspect/proc_text.c)
  target_include_directories(fuzz_recorder_proc PRIVATE ${REC_DIR})
  foreach(name elf maps python proc)
    target_compile_options(fuzz_recorder_${name} PRIVATE -fsanitize=fuzzer,address,undefined
      -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    target_link_options(fuzz_recorder_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    add_dependencies(fuzz_recorder_${name} corpus_recorder)
    string(TOUPPER ${name} upper)
    add_test(NAME fuzz.recorder_${name} COMMAND ${CMAKE_COMMAND}
      -DFUZZER=$<TARGET_FILE:fuzz_recorder_${name}> -DSEEDS=${REC_${upper}_CORPUS}
      -DEXTRA_SEEDS=${REC_${upper}_KEPT}
      -DWORK=${CMAKE_CURRENT_BINARY_DIR}/fuzz_recorder_${name}_work -DSHARE=25
      -P ${CMAKE_CURRENT_SOURCE_DIR}/run_fuzz.cmake)
    set_tests_properties(fuzz.recorder_${name} PROPERTIES LABELS fuzz TIMEOUT 3600)
  endforeach()
endif()
