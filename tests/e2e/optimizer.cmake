# The optimizer part of tests/CMakeLists.txt: weft optimize / weft inject e2e tests.
include(${CMAKE_CURRENT_LIST_DIR}/optimize.cmake)
