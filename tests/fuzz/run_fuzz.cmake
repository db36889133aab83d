# ctest fuzz.TARGET: fuzz a scratch copy of the seed corpus (new inputs land
# there, never in the source tree) for $ENV{FLIGHTREC_FUZZ_SECONDS} seconds.
# -DSEEDS=DIR (the committed corpus; may not exist yet), -DEXTRA_SEEDS=DIR
# (seeds written at build time), -DDICT=FILE (a libFuzzer dictionary).
if(DEFINED ENV{FLIGHTREC_FUZZ_SECONDS} AND NOT "$ENV{FLIGHTREC_FUZZ_SECONDS}" STREQUAL "")
  set(seconds $ENV{FLIGHTREC_FUZZ_SECONDS})
else()
  set(seconds 30)
endif()
# -DSHARE=N: a target that needs less runs N% of that (at least 5 s)
if(DEFINED SHARE)
  math(EXPR seconds "${seconds} * ${SHARE} / 100")
  if(seconds LESS 5)
    set(seconds 5)
  endif()
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
foreach(dir ${SEEDS} ${EXTRA_SEEDS})
  if(IS_DIRECTORY ${dir})
    file(COPY ${dir}/ DESTINATION ${WORK}/corpus)
  endif()
endforeach()
set(dict)
if(DEFINED DICT)
  set(dict -dict=${DICT})
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${seconds} -rss_limit_mb=2560 -timeout=30 ${dict}
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  get_filename_component(name ${FUZZER} NAME)
  message(FATAL_ERROR "${name} failed (exit ${rc}); crashing input in ${WORK}/artifacts")
endif()
