# fp8q_find_torch(): the imported target fp8q_libtorch (LibTorch's CPU libraries and headers)
# from a pip-installed torch: FP8Q_TORCH_ROOT (the torch package directory) or, when unset,
# the package of FP8Q_PYTHON (an interpreter that imports torch).
#
# Not find_package(Torch): the wheel on PyPI is a CUDA build whose TorchConfig.cmake enables
# the CUDA language, needs a CUDA toolkit to configure, and links libc10_cuda and nvrtc into
# every consumer. fp8q's operators are CPU kernels, so they link libtorch_cpu and libc10 only,
# as torch.utils.cpp_extension does for a CPU extension, and build without any CUDA toolkit.
function(fp8q_find_torch)
  if(TARGET fp8q_libtorch)
    return()
  endif()
  if(NOT FP8Q_TORCH_ROOT)
    if(NOT FP8Q_PYTHON)
      message(FATAL_ERROR "fp8q: set FP8Q_PYTHON (a Python that imports torch) or FP8Q_TORCH_ROOT")
    endif()
    execute_process(
      COMMAND ${FP8Q_PYTHON} -c "import os, torch; print(os.path.dirname(torch.__file__), end='')"
      OUTPUT_VARIABLE root RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "fp8q: ${FP8Q_PYTHON} cannot import torch: ${err}")
    endif()
    set(FP8Q_TORCH_ROOT ${root} CACHE PATH "The torch package directory whose LibTorch fp8q links")
  endif()
  foreach(f include/torch/library.h lib/libtorch_cpu.so lib/libc10.so)
    if(NOT EXISTS ${FP8Q_TORCH_ROOT}/${f})
      message(FATAL_ERROR "fp8q: ${FP8Q_TORCH_ROOT} has no ${f}: not a torch package with LibTorch")
    endif()
  endforeach()
  add_library(fp8q_libtorch INTERFACE IMPORTED GLOBAL)
  target_include_directories(fp8q_libtorch SYSTEM INTERFACE
    ${FP8Q_TORCH_ROOT}/include ${FP8Q_TORCH_ROOT}/include/torch/csrc/api/include)
  target_link_libraries(fp8q_libtorch INTERFACE ${FP8Q_TORCH_ROOT}/lib/libtorch_cpu.so ${FP8Q_TORCH_ROOT}/lib/libc10.so)
  set(FP8Q_TORCH_LIBDIR ${FP8Q_TORCH_ROOT}/lib PARENT_SCOPE)
  message(STATUS "fp8q: LibTorch from ${FP8Q_TORCH_ROOT}")
endfunction()
