// LOCR_HOST_DEVICE: marks an inline function that is compiled for the host and, in a CUDA
// translation unit (nvcc), for the device as well, so a kernel and the host reference run the same
// source (core/fp8.h's conversions, kernels/cuda/quant_blocks.h). Empty in ordinary C++. Such a
// function uses only what both sides have: integer and IEEE float arithmetic, std::memcpy,
// std::nearbyint (round to nearest even on both: the host's default rounding mode, PTX cvt.rni).
#pragma once

#ifdef __CUDACC__
#define LOCR_HOST_DEVICE __host__ __device__
#else
#define LOCR_HOST_DEVICE
#endif
