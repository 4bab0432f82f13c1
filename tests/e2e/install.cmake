# cmake --install into a temporary prefix: the installed weft runs without the
# build tree's files (its plugin, its fixtures, its man page and completion).
add_test(NAME e2e_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/install.sh)
set_tests_properties(e2e_install PROPERTIES TIMEOUT 600 LABELS e2e
  ENVIRONMENT "WEFT=$<TARGET_FILE:weft>;WEFT_FIXTURES=${WEFT_FIXTURE_DIR};WEFT_SRC=${CMAKE_SOURCE_DIR};QEMU_AARCH64=${QEMU_AARCH64};WEFT_TMP=${CMAKE_BINARY_DIR}/test-tmp;WEFT_BUILD=${CMAKE_BINARY_DIR}")
