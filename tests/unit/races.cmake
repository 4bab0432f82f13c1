weft_unit_test(test_races SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_races.c LIBS weft_races)
