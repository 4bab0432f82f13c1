# Bad input: every row of docs/errors.md, its one-line message and exit status.
weft_e2e_test(e2e_errors errors.sh)
