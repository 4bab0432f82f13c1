# Inputs that once broke weft's readers (fuzz/ found them), kept in
# tests/unit/data/fuzz_{trace,spool,plan}/ and checked by test_regressions.
if(TARGET weft_trace AND TARGET weft_optimizer)
  weft_unit_test(test_regressions SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_regressions.c
                 LIBS weft_trace weft_optimizer)
  target_compile_definitions(test_regressions PRIVATE
                             WEFT_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/unit/data")
  set_tests_properties(test_regressions PROPERTIES WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
                       ENVIRONMENT "WEFT_TEST_TMP=${CMAKE_BINARY_DIR}/test-tmp")
endif()
