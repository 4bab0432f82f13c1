# weft races: the documented data races of the fixtures are found with both
# source lines and the race-free ones get none; options, output and errors.
weft_e2e_test(e2e_races_fixtures races_fixtures.sh)
weft_e2e_test(e2e_races_cli races_cli.sh)
weft_e2e_test(e2e_races_libc races_libc.sh)
weft_e2e_test(e2e_races_stack_local races_stack_local.sh)
# Races drive the other tools: --points races, optimize --from-races.
weft_e2e_test(e2e_races_drive races_drive.sh)
weft_e2e_test(e2e_races_salvaged_clones races_salvaged_clones.sh)
weft_e2e_test(e2e_races_dynamic races_dynamic.sh)
weft_e2e_test(e2e_races_atomic_globals races_atomic_globals.sh)
