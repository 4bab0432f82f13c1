weft_e2e_test(e2e_shard shard.sh)
