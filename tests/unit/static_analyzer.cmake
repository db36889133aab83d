# ctest unit.static_analyzer (cmake -P): flightrec-analyze-static is static
# (no program interpreter, nothing for the loader to find) and writes what
# flightrec-analyze writes, byte for byte, for every output of a trace
# that exercises the libraries it links statically: make_memory_trace's
# trace (zstd chunks, stacks symbolized, the memory ledger) and an archive
# of it (libarchive), into SQLite (sqlite3).
#   -DSTATIC= -DDYNAMIC= -DMAKE_TRACE= -DWORK=
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${MAKE_TRACE} ${WORK}/mem.frec RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_memory_trace failed: ${rc}")
endif()
execute_process(COMMAND readelf -l ${STATIC} OUTPUT_VARIABLE phdrs RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR phdrs MATCHES "INTERP" OR phdrs MATCHES "DYNAMIC")
  message(FATAL_ERROR "${STATIC} is not a static executable:\n${phdrs}")
endif()
execute_process(COMMAND ${DYNAMIC} archive ${WORK}/mem.frec -o ${WORK}/mem.tar.zst RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "archive failed: ${rc}")
endif()
set(n 0)
foreach(input mem.frec mem.tar.zst)
  foreach(cmd "info;--json" "check" "dump" "flame;--kind;mem-alloc" "flame;--kind;mem-inuse;--format;svg"
              "memory;--json" "cuda;--json" "findings;--json" "summary;--format;json"
              "timeline;-o;-" "report;-o;-")
    execute_process(COMMAND ${STATIC} ${cmd} ${WORK}/${input} OUTPUT_VARIABLE a ERROR_VARIABLE ea
      RESULT_VARIABLE ra)
    execute_process(COMMAND ${DYNAMIC} ${cmd} ${WORK}/${input} OUTPUT_VARIABLE b ERROR_VARIABLE eb
      RESULT_VARIABLE rb)
    if(NOT ra STREQUAL rb OR NOT a STREQUAL b OR NOT ea STREQUAL eb)
      message(FATAL_ERROR "${cmd} ${input}: the static analyzer differs (exit ${ra} vs ${rb})\n${ea}")
    endif()
    string(LENGTH "${a}" len)
    if(len EQUAL 0 AND NOT cmd STREQUAL "check")
      message(FATAL_ERROR "${cmd} ${input}: no output")
    endif()
    math(EXPR n "${n} + 1")
  endforeach()
endforeach()
foreach(bin STATIC DYNAMIC)
  file(REMOVE ${WORK}/${bin}.db)
  execute_process(COMMAND ${${bin}} sqlite ${WORK}/mem.frec -o ${WORK}/${bin}.db RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${bin} sqlite failed: ${rc}")
  endif()
endforeach()
execute_process(COMMAND ${STATIC} --version OUTPUT_VARIABLE vs)
execute_process(COMMAND ${DYNAMIC} --version OUTPUT_VARIABLE vd)
if(NOT vs STREQUAL vd)
  message(FATAL_ERROR "--version differs: ${vs} / ${vd}")
endif()
message(STATUS "static analyzer: ${n} outputs identical, sqlite written")
