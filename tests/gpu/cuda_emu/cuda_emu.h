// Just enough CUDA for g++ to compile and run kernels/*.cu on the CPU.
//
// A launch runs the grid block by block. Each block runs on blockDim.x real threads (one
// std::thread per CUDA thread), so __syncthreads is a std::barrier and atomics are real atomics;
// __shared__ variables are static, hence shared by the block's threads and reused by the next
// block, as on the device. Only 1-D launches are supported.
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};

inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

namespace cuda_emu {
inline std::barrier<>* block_barrier = nullptr;

// Run kernel() for every thread of a grid_size x block_size launch.
inline void launch(unsigned int grid_size, unsigned int block_size,
                   const std::function<void()>& kernel) {
    gridDim = dim3{grid_size, 1, 1};
    blockDim = dim3{block_size, 1, 1};
    std::barrier<> barrier(block_size);
    block_barrier = &barrier;
    std::vector<std::thread> threads;
    threads.reserve(block_size);
    for (unsigned int t = 0; t < block_size; ++t) {
        threads.emplace_back([&, t] {
            threadIdx = dim3{t, 0, 0};
            for (unsigned int b = 0; b < grid_size; ++b) {
                blockIdx = dim3{b, 0, 0};
                kernel();
                barrier.arrive_and_wait();  // the next block starts when this one is done
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    block_barrier = nullptr;
}
}  // namespace cuda_emu

inline void __syncthreads() { cuda_emu::block_barrier->arrive_and_wait(); }

// ---- atomics: device semantics (return the old value) on std::atomic_ref ----
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    return std::atomic_ref<unsigned long long>(*address).fetch_add(value);
}
inline int atomicAdd(int* address, int value) {
    return std::atomic_ref<int>(*address).fetch_add(value);
}
inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
    return std::atomic_ref<unsigned int>(*address).fetch_add(value);
}
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long value) {
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long old = target.load();
    while (old < value && !target.compare_exchange_weak(old, value)) {
    }
    return old;
}

// ---- intrinsics and device math, with the device's exact semantics ----
inline long long __double2ll_rn(double x) {
    return static_cast<long long>(std::nearbyint(x));  // round half to even (default mode)
}
inline int __clzll(long long x) {
    return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline long long __double_as_longlong(double x) {
    long long bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}
inline double __longlong_as_double(long long bits) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}
using std::fabs;
using std::frexp;
using std::ldexp;
