# The process table after the suite: e2e_leftovers runs after every other
# test of this folder (they all require the fixture weft_suite, whose
# cleanup it is), also when ctest runs only some of them (-R), and fails if
# any qemu-aarch64 or weft started by them is still running. Included last.
weft_e2e_test(e2e_leftovers leftovers.sh)
get_property(weft_all_tests DIRECTORY PROPERTY TESTS)
list(REMOVE_ITEM weft_all_tests e2e_leftovers)
foreach(t ${weft_all_tests})
  set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED weft_suite)
endforeach()
set_tests_properties(e2e_leftovers PROPERTIES FIXTURES_CLEANUP weft_suite TIMEOUT 60)
