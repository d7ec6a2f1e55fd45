# fp8q_find_torch(): the imported target fp8q_libtorch (LibTorch's CPU libraries and headers)
# from a pip-installed torch: FP8Q_TORCH_ROOT (the torch package directory) or, when unset,
# the package of FP8Q_PYTHON (an interpreter that imports torch), or, when both are unset,
# DEFAULT_ROOT (what an installed fp8qConfig.cmake passes: the torch fp8q was built against).
# VERSION <v>: the torch found must be release <v> (torch/version.py, the +local part aside):
# libfp8q_torch.so is linked against one torch's C++ ABI. SOFT <var>: a failure sets <var> to
# the reason and returns (for find_package); otherwise it is a fatal error.
#
# Not find_package(Torch): the wheel on PyPI is a CUDA build whose TorchConfig.cmake enables
# the CUDA language, needs a CUDA toolkit to configure, and links libc10_cuda and nvrtc into
# every consumer. fp8q's operators are CPU kernels, so they link libtorch_cpu and libc10 only,
# as torch.utils.cpp_extension does for a CPU extension, and build without any CUDA toolkit.
#
# Also sets FP8Q_TORCH_LIBDIR (torch's lib directory) and FP8Q_TORCH_VERSION (e.g. 2.14.1)
# in the caller's scope.
function(fp8q_find_torch)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "DEFAULT_ROOT;VERSION;SOFT" "")
  macro(fp8q_torch_fail)
    if(arg_SOFT)
      string(CONCAT reason ${ARGN})
      set(${arg_SOFT} "${reason}" PARENT_SCOPE)
      return()
    endif()
    message(FATAL_ERROR ${ARGN})
  endmacro()
  if(arg_SOFT)
    set(${arg_SOFT} "" PARENT_SCOPE)
  endif()
  if(TARGET fp8q_libtorch)
    get_target_property(root fp8q_libtorch FP8Q_TORCH_ROOT)
    get_target_property(version fp8q_libtorch FP8Q_TORCH_VERSION)
    if(arg_VERSION AND NOT version VERSION_EQUAL arg_VERSION)
      fp8q_torch_fail("fp8q: fp8q_libtorch is torch ${version} (${root}), but fp8q::torch was built against torch "
                      "${arg_VERSION}")
    endif()
    set(FP8Q_TORCH_LIBDIR ${root}/lib PARENT_SCOPE)
    set(FP8Q_TORCH_VERSION ${version} PARENT_SCOPE)
    return()
  endif()
  # A root this function derived from an interpreter is cached with that interpreter, so that
  # pointing FP8Q_PYTHON at another environment (a reused build tree) looks again; a root the
  # user set (one that differs from the derived one) is kept.
  if(FP8Q_PYTHON AND DEFINED CACHE{FP8Q_TORCH_ROOT_FROM} AND FP8Q_TORCH_ROOT STREQUAL FP8Q_TORCH_ROOT_FROM
     AND NOT FP8Q_TORCH_ROOT_PYTHON STREQUAL FP8Q_PYTHON)
    unset(FP8Q_TORCH_ROOT CACHE)
    unset(FP8Q_TORCH_ROOT)
  endif()
  if(FP8Q_TORCH_ROOT)
    set(root ${FP8Q_TORCH_ROOT})
  elseif(FP8Q_PYTHON)
    execute_process(
      COMMAND ${FP8Q_PYTHON} -c "import os, torch; print(os.path.dirname(torch.__file__), end='')"
      OUTPUT_VARIABLE root RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      fp8q_torch_fail("fp8q: ${FP8Q_PYTHON} cannot import torch: ${err}")
    endif()
    set(FP8Q_TORCH_ROOT ${root} CACHE PATH "The torch package directory whose LibTorch fp8q links")
    set(FP8Q_TORCH_ROOT_PYTHON ${FP8Q_PYTHON} CACHE INTERNAL "The interpreter FP8Q_TORCH_ROOT was found with")
    set(FP8Q_TORCH_ROOT_FROM ${root} CACHE INTERNAL "The FP8Q_TORCH_ROOT it gave")
  elseif(arg_DEFAULT_ROOT)
    set(root ${arg_DEFAULT_ROOT})
  else()
    fp8q_torch_fail("fp8q: set FP8Q_PYTHON (a Python that imports torch) or FP8Q_TORCH_ROOT")
  endif()
  foreach(f include/torch/library.h lib/libtorch_cpu.so lib/libc10.so version.py)
    if(NOT EXISTS ${root}/${f})
      fp8q_torch_fail("fp8q: ${root} has no ${f}: not a torch package with LibTorch "
                      "(set FP8Q_TORCH_ROOT or FP8Q_PYTHON)")
    endif()
  endforeach()
  file(STRINGS ${root}/version.py line REGEX "^__version__ *= *['\"]")
  string(REGEX MATCH "[0-9]+(\\.[0-9]+)*" version "${line}")
  if(arg_VERSION AND NOT version VERSION_EQUAL arg_VERSION)
    fp8q_torch_fail("fp8q: ${root} is torch ${version}, but fp8q::torch was built against torch ${arg_VERSION} "
                    "(set FP8Q_TORCH_ROOT or FP8Q_PYTHON to that torch, or rebuild fp8q against this one)")
  endif()
  add_library(fp8q_libtorch INTERFACE IMPORTED GLOBAL)
  target_include_directories(fp8q_libtorch SYSTEM INTERFACE
    ${root}/include ${root}/include/torch/csrc/api/include)
  target_link_libraries(fp8q_libtorch INTERFACE ${root}/lib/libtorch_cpu.so ${root}/lib/libc10.so)
  set_target_properties(fp8q_libtorch PROPERTIES FP8Q_TORCH_ROOT ${root} FP8Q_TORCH_VERSION "${version}")
  set(FP8Q_TORCH_LIBDIR ${root}/lib PARENT_SCOPE)
  set(FP8Q_TORCH_VERSION ${version} PARENT_SCOPE)
  message(STATUS "fp8q: LibTorch ${version} from ${root}")
endfunction()
