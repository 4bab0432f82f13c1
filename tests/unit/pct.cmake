# Scheduling policies (pct/): semantics, and hit rates against the guarantees.
# The abstract-program simulator's header (pct/pct_sim.h) is private to pct/.
foreach(t test_pct test_pct_rates)
  if(TARGET weft_pct AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c)
    weft_unit_test(${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c LIBS weft_pct)
    target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/pct)
  endif()
endforeach()
