# The shape of the tree: dependencies between components run one way.
add_test(NAME structure_layering COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/structure/layering.sh)
set_tests_properties(structure_layering PROPERTIES TIMEOUT 60 LABELS unit
  ENVIRONMENT "WEFT_SRC=${CMAKE_SOURCE_DIR}")
