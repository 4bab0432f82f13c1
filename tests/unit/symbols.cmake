# Symbolization of the AArch64 fixture with elfutils.
if(TARGET weft_trace)
  weft_unit_test(test_symbols SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_symbols.c
                 LIBS weft_trace)
  target_compile_definitions(test_symbols PRIVATE
                             WEFT_TEST_FIXTURE="${WEFT_FIXTURE_DIR}/lost_update")
  add_dependencies(test_symbols fixtures)
endif()
