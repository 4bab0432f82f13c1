weft_e2e_test(e2e_optimize_inject optimize.sh)
weft_e2e_test(e2e_optimize_errors optimize_errors.sh)
weft_e2e_test(e2e_inject_pc inject_pc.sh)
weft_e2e_test(e2e_optimize_reads optimize_reads.sh)
