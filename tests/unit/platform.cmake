weft_unit_test(test_platform SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_platform.c LIBS weft_platform)
