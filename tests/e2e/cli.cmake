# The weft command line: dispatch, help, the option convention, completion.
weft_e2e_test(e2e_cli_options cli_options.sh)
