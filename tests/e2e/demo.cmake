# weft demo: the default run end to end, and every fixture (in three parts,
# each within the e2e time limit).
weft_e2e_test(e2e_demo demo.sh)
foreach(i 0 1 2)
  add_test(NAME e2e_demo_fixtures_${i}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/demo_fixtures.sh ${i} 3)
  set_tests_properties(e2e_demo_fixtures_${i} PROPERTIES TIMEOUT 1200 LABELS e2e
    ENVIRONMENT "WEFT=$<TARGET_FILE:weft>;WEFT_FIXTURES=${WEFT_FIXTURE_DIR};WEFT_SRC=${CMAKE_SOURCE_DIR};QEMU_AARCH64=${QEMU_AARCH64};WEFT_TMP=${CMAKE_BINARY_DIR}/test-tmp")
endforeach()
