# Exact mode by speculation: the ordering check of tracer/spec_shadow.c.
if(TARGET weft_spec)
  weft_unit_test(test_spec_shadow SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_spec_shadow.c
                 LIBS weft_spec)
endif()
