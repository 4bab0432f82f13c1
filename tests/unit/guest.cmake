# Running qemu (guest/): a stop a caller's signal handler noted ends a run
# at once, whether it came before the run started or while it ran.
if(TARGET weft_guest)
  weft_unit_test(test_guest_interrupt SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_guest_interrupt.c
                 LIBS weft_guest)
  target_compile_definitions(test_guest_interrupt PRIVATE
                             WEFT_TEST_FIXTURES="${WEFT_FIXTURE_DIR}")
  add_dependencies(test_guest_interrupt fixtures)
endif()
