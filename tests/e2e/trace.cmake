weft_e2e_test(e2e_cli cli.sh)
weft_e2e_test(e2e_trace_fixtures trace_fixtures.sh)
weft_e2e_test(e2e_trace_failures trace_failures.sh)
weft_e2e_test(e2e_sysroot sysroot.sh)
