# The CUDA path on the CPU emulator (cuda_emu.h), built with the CUDA backend (it needs the
# toolkit's headers). Each kernels/cuda .cu file of our kernels is rewritten by
# emu_translate.py and compiled by the host compiler, with the emulator's header forced in and
# its cuda_ptx.cuh (mma.sync, ldmatrix and cp.async without PTX) in place of the real one. The
# emulated runtime (cuda_emu_cudart.cpp, cuda_emu_streams.cpp), cuBLASLt (cublaslt_emu.cpp) and
# NCCL over MPI (nccl_emu.cpp) and, with cuDNN's headers, cuDNN's backend API (cudnn_emu.cpp)
# take the place of libcudart's, libcublasLt's, libnccl's and libcudnn's functions in the
# executables that link them, so kernels/cuda's and parallel/cuda's host code (CudaBackend,
# cuda_matmul.cpp, stream capture, events, NcclComm, the cuDNN attention graphs) runs
# unchanged.
# - test_cuda_emu: the parity tables and tests/kernels/cuda's op, matmul, graph and contract
#   tests against the CPU backend, the emulator's self-tests, whole models.
# - test_parallel_cuda_emu: tests/parallel/cuda's NcclComm cases on one emulated GPU.
# - trainer_emu: the trainer itself, for tests/e2e/test_cuda_emu_train.sh (train.device: cuda).
# Unlike test_cuda they run (and can fail) on every machine: they check what the code
# computes, while test_cuda on a GPU checks the real thing.
# Without python3 (it rewrites the sources) they are left out with a note, so that a machine
# built only to run the GPU tests (scripts/gpu_check.sh) still configures.
find_package(Python3 COMPONENTS Interpreter)
if(TRAINER_HAVE_CUDA AND NOT Python3_Interpreter_FOUND)
  message(STATUS "trainer: no python3: test_cuda_emu and trainer_emu (the CUDA path on the CPU emulator) are not built")
endif()
if(TRAINER_HAVE_CUDA AND Python3_Interpreter_FOUND)
  set(emu_dir ${CMAKE_CURRENT_LIST_DIR})
  # Every kernel file: one left out would be linked from trainer_kernels, compiled for a real GPU.
  file(GLOB emu_cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/cuda/*.cu)
  list(APPEND emu_cuda_sources ${emu_dir}/emu_selftest.cu)
  set(emu_translated)  # the kernels; the self-tests' own kernels last
  foreach(src ${emu_cuda_sources})
    get_filename_component(name ${src} NAME_WE)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/${name}.cpp)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu
      COMMAND ${Python3_EXECUTABLE} ${emu_dir}/emu_translate.py ${src} ${out}
      DEPENDS ${src} ${emu_dir}/emu_translate.py
      COMMENT "Rewriting ${name}.cu for the CUDA emulator" VERBATIM)
    list(APPEND emu_translated ${out})
  endforeach()
  # -ffp-contract=off: the kernels' IEEE-rounded intrinsics (__fmul_rn ...) are plain operations
  # here, and box_muller.h's host path requires it (TRAINER_FP_CONTRACT_OFF).
  set_source_files_properties(${emu_translated} PROPERTIES
    COMPILE_OPTIONS "-include;${emu_dir}/cuda_emu.h;-ffp-contract=off;-Wno-unknown-pragmas;-Wno-attributes;-Wno-sign-compare"
    COMPILE_DEFINITIONS TRAINER_FP_CONTRACT_OFF)
  list(POP_BACK emu_translated emu_selftest_translated)
  # The kernels and the emulated runtime, compiled once for both executables.
  add_library(trainer_cuda_emu OBJECT ${emu_translated} ${emu_dir}/cuda_emu_runtime.cpp ${emu_dir}/cuda_emu_cudart.cpp
    ${emu_dir}/cuda_emu_streams.cpp ${emu_dir}/cublaslt_emu.cpp ${emu_dir}/nccl_emu.cpp)
  if(TRAINER_HAVE_CUDNN)  # cuDNN's backend API over the same runtime (train.attention: cudnn)
    target_sources(trainer_cuda_emu PRIVATE ${emu_dir}/cudnn_emu.cpp ${emu_dir}/cudnn_emu_graph.cpp
      ${emu_dir}/cudnn_emu_run.cpp)
  endif()
  target_include_directories(trainer_cuda_emu BEFORE PRIVATE ${emu_dir}/shadow)
  target_link_libraries(trainer_cuda_emu PRIVATE trainer_parallel)  # kernels, MPI and nccl.h

  # With them, tests/kernels/cuda's tests through their make_rig (cudnn_attention's with cuDNN's
  # headers), but for the parity tables, which test_cuda_emu.cpp runs its own way.
  file(GLOB emu_cuda_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cuda/test_cuda_*.cpp)
  list(FILTER emu_cuda_tests EXCLUDE REGEX "/test_cuda_parity\\.cpp$")
  add_executable(test_cuda_emu $<TARGET_OBJECTS:trainer_cuda_emu> ${emu_selftest_translated} ${emu_dir}/test_cuda_emu.cpp
    ${emu_dir}/test_cuda_emu_model.cpp ${emu_dir}/test_cublaslt_emu.cpp ${emu_dir}/test_emu_runtime.cpp
    ${emu_dir}/test_emu_attention_work.cpp ${emu_dir}/test_emu_norm_launches.cpp ${emu_cuda_tests})
  target_include_directories(test_cuda_emu BEFORE PRIVATE ${emu_dir}/shadow)  # the self-tests' cp.async
  # trainer_app (step graphs, and trainer_model) for the whole-model cases (test_cuda_emu_model.cpp).
  target_link_libraries(test_cuda_emu PRIVATE trainer_app trainer_test_main)
  if(TRAINER_HAVE_CUDNN)
    target_sources(test_cuda_emu PRIVATE ${emu_dir}/test_cudnn_emu.cpp)
  endif()
  doctest_discover_tests(test_cuda_emu TEST_PREFIX "cuda_emu: "
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS unit ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")

  # NcclComm on one emulated GPU: tests/parallel/cuda's own cases.
  add_executable(test_parallel_cuda_emu $<TARGET_OBJECTS:trainer_cuda_emu> ${PROJECT_SOURCE_DIR}/tests/support/cuda_main.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/cuda/test_nccl_comm.cpp)
  target_link_libraries(test_parallel_cuda_emu PRIVATE trainer_parallel trainer_test_util)
  doctest_discover_tests(test_parallel_cuda_emu TEST_PREFIX "cuda_emu: "
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS unit ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2")
  # Again in the emulator's adversarial stream order (cuda_emu_streams.cpp): work runs only when
  # the host blocks, newest streams first, so a missing wait on the compute stream shows.
  # One ctest test running each case in its own process (a second doctest_discover_tests of a
  # target would replace the first's tests).
  add_test(NAME "cuda_emu deferred: test_parallel_cuda_emu"
    COMMAND bash ${emu_dir}/run_each_case.sh $<TARGET_FILE:test_parallel_cuda_emu>
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties("cuda_emu deferred: test_parallel_cuda_emu" PROPERTIES LABELS unit
    ENVIRONMENT "OMP_NUM_THREADS=2;OPENBLAS_NUM_THREADS=2;TRAINER_EMU_ORDER=deferred")

  add_executable(trainer_emu ${PROJECT_SOURCE_DIR}/app/cli/main.cpp $<TARGET_OBJECTS:trainer_cuda_emu>)
  target_link_libraries(trainer_emu PRIVATE trainer_app)
  set_target_properties(trainer_emu PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
endif()
