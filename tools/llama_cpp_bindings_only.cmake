# Included right after llama.cpp's project() call (`make setup` passes
# -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file> to llama-cpp-python's build through CMAKE_ARGS).
# llama-cpp-python loads only libllama and libggml*, yet its CMakeLists forces llama.cpp's
# common library on (a cache entry set with FORCE): common and its HTTP client were about half of
# the compile (docs/benchmarks.md). A normal variable in llama.cpp's scope shadows that cache
# entry, so option() keeps it and common is not built.
set(LLAMA_BUILD_COMMON OFF)
