# Trace file library: writer/reader round trip, canonical order, corruption
# handling and salvage (test_trace); info and export views (test_trace_views).
if(TARGET weft_trace)
  weft_unit_test(test_trace SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace_corrupt.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace_encoding.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace_keep.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace_online.c LIBS weft_trace)
  # test_trace checks the library's CRC-32 (libdeflate's) against zlib's.
  target_include_directories(test_trace PRIVATE ${CMAKE_SOURCE_DIR}/tracer)
  target_link_libraries(test_trace PRIVATE PkgConfig::ZLIB)
  weft_unit_test(test_trace_views SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_trace_views.c
                 LIBS weft_trace)
  target_compile_definitions(test_trace_views PRIVATE
                             WEFT_TEST_FIXTURE="${WEFT_FIXTURE_DIR}/lost_update")
  add_dependencies(test_trace_views fixtures)
  # Tests write their files under the build tree, never next to the sources.
  foreach(t test_trace test_trace_views)
    set_tests_properties(${t} PROPERTIES WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
                         ENVIRONMENT "WEFT_TEST_TMP=${CMAKE_BINARY_DIR}/test-tmp")
  endforeach()
endif()
