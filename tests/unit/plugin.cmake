# The plugin's AArch64 decoding (tracer/insn_decode.c).
if(TARGET weft_insn)
  weft_unit_test(test_insn SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_insn.c LIBS weft_insn)
endif()
