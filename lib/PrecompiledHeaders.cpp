// The source the precompiled LLVM and MLIR headers are built with (see the
// top-level CMakeLists.txt); it has nothing of its own.
