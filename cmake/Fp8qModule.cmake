# fp8q_module(NAME SOURCES...): one library target per module, fp8q_<NAME> with the alias
# fp8q::<NAME>, public headers under <module>/include, installed and exported.
# Numerics code is compiled with -ffp-contract=off: a fused multiply-add would change bits.
function(fp8q_module name)
  set(target fp8q_${name})
  add_library(${target} ${ARGN})
  add_library(fp8q::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_options(${target} PRIVATE -ffp-contract=off -Wall -Wextra -Wpedantic)
  target_compile_features(${target} PUBLIC cxx_std_20)
  install(TARGETS ${target} EXPORT fp8qTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# The instruction sets this build compiles kernels for, from the target processor: each has
# FP8Q_HAVE_<ISA> defined in every translation unit of the project, so that a module's internal
# kernel header can declare an ISA's kernel getter where it is compiled, and define it inline
# as nullptr where it is not (docs/performance.md, "Instruction sets"). Chosen at run time.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(FP8Q_ISAS avx2 avx512 avx512bf16)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(FP8Q_ISAS neon)
else()
  set(FP8Q_ISAS "")
endif()
foreach(isa IN LISTS FP8Q_ISAS)
  string(TOUPPER ${isa} upper)
  add_compile_definitions(FP8Q_HAVE_${upper})
endforeach()

# Each ISA's compiler flags. avx2 is AVX2 + FMA + F16C, the level Isa::kAvx2 checks at run time;
# avx512 is F + BW (Isa::kAvx512); avx512bf16 adds BF16, which its getters check themselves.
# NEON is part of the aarch64 baseline.
set(FP8Q_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(FP8Q_FLAGS_avx512 -mavx512f -mavx512bw)
set(FP8Q_FLAGS_avx512bf16 -mavx512f -mavx512bw -mavx512bf16)
set(FP8Q_FLAGS_neon "")

# fp8q_isa_source(TARGET ISA FILE [FLAGS...]): FILE holds one instruction set's kernels and is
# the only file compiled with that ISA's flags (plus FLAGS); the rest of the binary runs on any
# CPU of the target architecture. Where the target has no such ISA, FILE is not compiled.
function(fp8q_isa_source target isa file)
  if(NOT DEFINED FP8Q_FLAGS_${isa})
    message(FATAL_ERROR "fp8q_isa_source: unknown ISA '${isa}' (one of: avx2 avx512 avx512bf16 neon)")
  endif()
  if(isa IN_LIST FP8Q_ISAS)
    target_sources(${target} PRIVATE ${file})
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${FP8Q_FLAGS_${isa}};${ARGN}")
  endif()
endfunction()
