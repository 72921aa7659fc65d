# Enables CUDA for the whole build when nvcc is present (included from the top-level
# CMakeLists.txt, because enable_language must run in the directory common to every target that
# links CUDA code). Without nvcc, or with -DFUSERULE_CUDA=OFF, the build has no CUDA backend:
# kernels/cuda/CMakeLists.txt then adds nothing and `--target cuda` says so.
option(FUSERULE_CUDA "Build the CUDA backend when nvcc is found" ON)
if(FUSERULE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(FUSERULE_CUDA AND CMAKE_CUDA_COMPILER)
  # sm_90 machine code plus PTX, so newer GPUs JIT it; nothing else, to keep CI builds short.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
  endif()
  enable_language(CUDA)
  set(FUSERULE_HAVE_CUDA ON)
else()
  set(FUSERULE_HAVE_CUDA OFF)
endif()
