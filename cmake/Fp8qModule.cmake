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

# fp8q_isa_source(TARGET FILE FLAGS...): FILE holds one instruction set's kernels and is the
# only file compiled with that ISA's flags; the rest of the binary runs on any x86-64.
function(fp8q_isa_source target file)
  target_sources(${target} PRIVATE ${file})
  set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${ARGN}")
endfunction()
