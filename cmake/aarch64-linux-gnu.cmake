# Cross-compiling for 64-bit Arm Linux with Debian's toolchain (g++-aarch64-linux-gnu,
# libc6-dev-arm64-cross); scripts/test-aarch64.sh runs the result under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(FP8Q_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
# Libraries and packages come from the target's root and CMAKE_PREFIX_PATH (GoogleTest built for
# the target); header-only packages of the host (nlohmann-json) are found through BOTH.
set(CMAKE_FIND_ROOT_PATH ${FP8Q_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Test programs (and gtest_discover_tests) run through the emulator.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${FP8Q_AARCH64_SYSROOT})
