# Symbolization of the AArch64 fixture with elfutils.
if(TARGET weft_trace)
  weft_unit_test(test_symbols SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_symbols.c
                 LIBS weft_trace)
  # A dynamically linked build of the same program, for the code map's PLT
  # side (the fixtures themselves are static).
  set(dyn "${CMAKE_CURRENT_BINARY_DIR}/lost_update_dyn")
  add_custom_command(OUTPUT "${dyn}"
    COMMAND ${AARCH64_CC} -pthread -O1 -g -o "${dyn}" "${PROJECT_SOURCE_DIR}/fixtures/lost_update.c"
    DEPENDS "${PROJECT_SOURCE_DIR}/fixtures/lost_update.c" VERBATIM)
  add_custom_target(test_symbols_dyn DEPENDS "${dyn}")
  target_compile_definitions(test_symbols PRIVATE
                             WEFT_TEST_FIXTURE="${WEFT_FIXTURE_DIR}/lost_update"
                             WEFT_TEST_FIXTURE_DYN="${dyn}")
  add_dependencies(test_symbols fixtures test_symbols_dyn)
endif()
