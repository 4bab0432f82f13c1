# Guests that fork+exec, take signals, are stopped with SIGTERM/SIGINT, run
# 200 threads or write 50 MB (the crash/abort/deadlock/loop cases are
# e2e_trace_failures).
weft_e2e_test(e2e_guest_failures guest_failures.sh)
