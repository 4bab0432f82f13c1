# Guest fixtures under plain qemu-aarch64: each one's exit status matches
# fixtures/manifest.tsv and no run prints a BUG line. Needs no weft binary.
add_test(NAME e2e_plain_fixtures COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/plain_fixtures.sh)
set_tests_properties(e2e_plain_fixtures PROPERTIES TIMEOUT 300 LABELS e2e
  ENVIRONMENT "QEMU_AARCH64=${QEMU_AARCH64};WEFT_FIXTURES=${WEFT_FIXTURE_DIR};WEFT_SRC=${CMAKE_SOURCE_DIR}")
# The bug-finding benchmark (fixtures/bench/): manifest, flavors, and every
# oracle firing on its forced build.
weft_e2e_test(e2e_bench_fixtures bench_fixtures.sh)
