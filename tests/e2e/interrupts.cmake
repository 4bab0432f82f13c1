# Nothing lost: SIGINT/SIGTERM/SIGKILL to weft trace on endless guests, and
# kills at random moments of weft export/optimize/trace over existing files.
weft_e2e_test(e2e_interrupts interrupts.sh)
