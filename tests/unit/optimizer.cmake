# The model, solver and plan tests need only the optimizer core; the trace
# test also needs the trace reader library.
foreach(t model exact plan)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_optimizer_${t}.c)
    weft_unit_test(test_optimizer_${t}
      SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_optimizer_${t}.c LIBS weft_optimizer_core)
  endif()
endforeach()
if(TARGET weft_trace AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_optimizer_trace.c)
  weft_unit_test(test_optimizer_trace
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_optimizer_trace.c LIBS weft_optimizer)
endif()
