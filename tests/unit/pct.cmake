# Scheduling policies (pct/): semantics, step counting, POS, schedule
# bounding, and hit rates against the guarantees.
# The abstract-program simulator's header (pct/pct_sim.h) is private to pct/.
# The rate tests take their Clopper-Pearson intervals from search/.
foreach(t test_pct test_pct_rates test_pct_steps test_pct_pos test_pct_bounded
       test_pct_script test_pct_sleep)
  if(TARGET weft_pct AND TARGET weft_search AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c)
    weft_unit_test(${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c LIBS weft_pct weft_search)
    target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/pct)
  endif()
endforeach()
