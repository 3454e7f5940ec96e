# NCCL and cuDNN for the CUDA build. Both may live under NCCL_HOME / CUDNN_HOME (or _ROOT; these
# come first), in the CUDA toolkit, in a system path, or in the Python wheels nvidia-nccl-cu13 / nvidia-cudnn-cu13
# (site-packages/nvidia/{nccl,cudnn}/{include,lib}), which ship only versioned libraries
# (libnccl.so.2, libcudnn.so.9) and no unversioned link.
#   NCCL is required: every device-side collective goes through it.
#   cuDNN is optional: only train.attention: cudnn calls it (kernels/cuda/cudnn_attention.cpp), so
#   a build without it is complete and refuses that choice with a clear error; when found it is
#   linked and TRAINER_HAVE_CUDNN is defined.
# Sets TRAINER_NCCL_LIB, TRAINER_NCCL_INCLUDE_DIR, TRAINER_CUDNN_LIB (or -NOTFOUND),
# TRAINER_CUDNN_INCLUDE_DIR.

# site-packages/nvidia/<name> of the first python3 on PATH that has the wheel.
function(trainer_python_wheel_dir name out)
  set(${out} "" PARENT_SCOPE)
  find_program(TRAINER_PYTHON3 python3)
  if(NOT TRAINER_PYTHON3)
    return()
  endif()
  execute_process(
    COMMAND ${TRAINER_PYTHON3} -c
      "import importlib.util as u; s = u.find_spec('nvidia.${name}'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND dir AND IS_DIRECTORY "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

function(trainer_find_cuda_library var_prefix name soversion)
  string(TOUPPER ${name} upper)
  trainer_python_wheel_dir(${name} wheel_dir)
  # Order: what the user named (NCCL_HOME / CUDNN_HOME, env or -D), the CUDA toolkit, the wheel.
  set(lib_hints "")
  set(inc_hints "")
  foreach(root $ENV{${upper}_HOME} $ENV{${upper}_ROOT} ${${upper}_HOME})
    list(APPEND lib_hints ${root}/lib ${root}/lib64)
    list(APPEND inc_hints ${root}/include)
  endforeach()
  list(APPEND lib_hints ${CUDAToolkit_LIBRARY_DIR})
  list(APPEND inc_hints ${CUDAToolkit_INCLUDE_DIRS})
  if(wheel_dir)
    list(APPEND lib_hints ${wheel_dir}/lib)
    list(APPEND inc_hints ${wheel_dir}/include)
  endif()
  find_library(${var_prefix}_LIB NAMES ${name} lib${name}.so.${soversion} HINTS ${lib_hints})
  find_path(${var_prefix}_INCLUDE_DIR ${name}.h HINTS ${inc_hints})
endfunction()

trainer_find_cuda_library(TRAINER_NCCL nccl 2)
if(NOT TRAINER_NCCL_LIB OR NOT TRAINER_NCCL_INCLUDE_DIR)
  message(FATAL_ERROR "NCCL not found (library: ${TRAINER_NCCL_LIB}, nccl.h: ${TRAINER_NCCL_INCLUDE_DIR}). "
                      "Install libnccl-dev or the nvidia-nccl-cu13 wheel, or set NCCL_HOME to a folder "
                      "holding include/nccl.h and lib/libnccl.so*; or configure with -DTRAINER_CUDA=OFF")
endif()
message(STATUS "trainer: NCCL ${TRAINER_NCCL_LIB}")

trainer_find_cuda_library(TRAINER_CUDNN cudnn 9)
if(TRAINER_CUDNN_LIB AND TRAINER_CUDNN_INCLUDE_DIR)
  set(TRAINER_HAVE_CUDNN ON)
  message(STATUS "trainer: cuDNN ${TRAINER_CUDNN_LIB}")
else()
  set(TRAINER_HAVE_CUDNN OFF)
  message(STATUS "trainer: cuDNN not found; building without it (train.attention: cudnn is refused)")
endif()
