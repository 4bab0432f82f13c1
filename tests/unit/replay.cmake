# weft replay's pure parts: delta debugging (ddmin) on toy oracles, and
# schedule files written, read back and refused.
weft_unit_test(test_replay_ddmin SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_replay_ddmin.c
               LIBS weft_replay)
