# Inputs that once broke weft's readers (fuzz/ found them), kept in
# tests/unit/data/fuzz_{trace,spool,plan,options,campaign,runs}/ and checked
# by test_regressions. Command lines go through cli_parse: the cli's objects
# with weft.c's main renamed (as fuzz/ builds them), so that a kept input's
# command index means the same list of commands (cli_commands).
if(TARGET weft_trace AND TARGET weft_optimizer AND TARGET weft_report)
  file(GLOB regress_cli_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cli/*.c)
  add_library(weft_cli_regress STATIC ${regress_cli_sources})
  target_compile_definitions(weft_cli_regress PRIVATE main=weft_cli_main
                             WEFT_VERSION="${PROJECT_VERSION}")
  target_include_directories(weft_cli_regress PUBLIC ${CMAKE_SOURCE_DIR}/cli)
  target_link_libraries(weft_cli_regress PUBLIC weft_demo weft_report weft_replay weft_optimizer
                        weft_guest weft_trace weft_search weft_pct weft_races)
  weft_unit_test(test_regressions SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_regressions.c
                 LIBS weft_cli_regress weft_report weft_replay weft_trace weft_optimizer)
  target_compile_definitions(test_regressions PRIVATE
                             WEFT_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/unit/data")
  set_tests_properties(test_regressions PROPERTIES WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
                       ENVIRONMENT "WEFT_TEST_TMP=${CMAKE_BINARY_DIR}/test-tmp")
endif()
