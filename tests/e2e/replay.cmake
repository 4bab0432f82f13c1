# weft replay: options, verdicts, known bugs, bug-free controls, campaigns.
weft_e2e_test(e2e_replay_cli replay_cli.sh)
weft_e2e_test(e2e_replay_verdicts replay_verdicts.sh)
weft_e2e_test(e2e_replay_yield_spin replay_yield_spin.sh)
weft_e2e_test(e2e_replay_signal_order replay_signal_order.sh)
weft_e2e_test(e2e_replay_openmp replay_openmp.sh)
weft_e2e_test(e2e_replay_points_init replay_points_init.sh)
weft_e2e_test(e2e_replay_outline_atomics replay_outline_atomics.sh)
weft_e2e_test(e2e_replay_plt_points replay_plt_points.sh)
weft_e2e_test(e2e_replay_bugs replay_bugs.sh)
weft_e2e_test(e2e_replay_controls replay_controls.sh)
weft_e2e_test(e2e_replay_campaign replay_campaign.sh)
weft_e2e_test(e2e_replay_determinism replay_determinism.sh)
weft_e2e_test(e2e_replay_controls_bench replay_controls_bench.sh)
# Sleeps skipped under a policy, unless --real-sleeps: the same runs.
weft_e2e_test(e2e_replay_sleeps replay_sleeps.sh)
# getrandom, /dev/urandom and AT_RANDOM: one fixed stream, unless --real-random.
weft_e2e_test(e2e_replay_random replay_random.sh)
# A failing run explained (--explain, weft explain), minimized (--minimize)
# and replayed from its schedule file 10 times (--schedule).
weft_e2e_test(e2e_replay_explain replay_explain.sh)
weft_e2e_test(e2e_replay_fork_server replay_fork_server.sh)
# Without --save-trace a campaign's runs keep the trace's footer alone.
weft_e2e_test(e2e_replay_lazy_trace replay_lazy_trace.sh)
# Library loads watched in wait loops only: a library spinlock still relieved.
weft_e2e_test(e2e_replay_library_loads replay_library_loads.sh)
# Blocks counted inline: the same runs and traces as with a callback each.
weft_e2e_test(e2e_replay_inline_blocks replay_inline_blocks.sh)
weft_e2e_test(e2e_replay_stack_spin replay_stack_spin.sh)
weft_e2e_test(e2e_replay_pretranslate replay_pretranslate.sh)
# Timed waits end when the schedule fires them, not by the host's clock.
weft_e2e_test(e2e_replay_timeouts replay_timeouts.sh)
