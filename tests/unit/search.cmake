weft_unit_test(test_search SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_search.c LIBS weft_search)
