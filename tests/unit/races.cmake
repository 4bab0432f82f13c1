# The race detector: its engine on hand-built event sequences (test_races);
# the instruction classifier, on encodings and on a fixture's code, and the
# API's results, errors and output (test_races_api).
weft_unit_test(test_races SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_races.c LIBS weft_races)
weft_unit_test(test_races_api SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_races_api.c
               LIBS weft_races)
target_include_directories(test_races_api PRIVATE ${CMAKE_SOURCE_DIR}/races)
target_compile_definitions(test_races_api PRIVATE
                           WEFT_TEST_FIXTURE="${WEFT_FIXTURE_DIR}/lost_update_ok")
add_dependencies(test_races_api fixtures)
