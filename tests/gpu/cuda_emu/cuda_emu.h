// Just enough CUDA for g++ to compile and run kernels/*.cu on the CPU.
//
// A launch runs the grid block by block. Each block runs on blockDim.x real threads (one
// std::thread per CUDA thread), so __syncthreads is a std::barrier and atomics are real atomics;
// __shared__ variables are static, hence shared by the block's threads and reused by the next
// block, as on the device. Only 1-D launches are supported.
//
// Warps: threads 32w .. 32w + 31 form warp w, with a barrier of their own. The warp intrinsics
// (__ballot_sync, __shfl_sync, __syncwarp) exchange values through per-warp slots between two
// waits on that barrier, so every lane of the warp must reach the same call, as the full mask
// 0xffffffff demands on the device; a block whose size is not a multiple of 32, another mask, or
// a warp whose lanes do not all arrive within a minute (divergent code) aborts rather than hangs.
// Dynamic shared memory (gsh_dynamic_shared() in kernels/common.cuh) is one buffer of the
// launch's shared_bytes, shared by the block's threads and reused block after block; it starts
// filled with 0xA5 bytes, never zeros, so a kernel that reads before writing shows it.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
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
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
// kernels/common.cuh: use the emulator's dynamic shared memory, not an extern __shared__ array
#define GSH_EMULATED 1

namespace cuda_emu {
inline std::barrier<>* block_barrier = nullptr;
inline unsigned char* dynamic_shared = nullptr;

// The barrier of one warp's lanes; aborts when they do not all arrive within a minute.
#ifndef CUDA_EMU_WARP_TIMEOUT_S
#define CUDA_EMU_WARP_TIMEOUT_S 60
#endif
class WarpBarrier {
  public:
    explicit WarpBarrier(std::ptrdiff_t lanes) : lanes_(lanes) {}

    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        const unsigned long long generation = generation_;
        if (++arrived_ == lanes_) {
            arrived_ = 0;
            ++generation_;
            changed_.notify_all();
            return;
        }
        const auto limit = std::chrono::seconds(CUDA_EMU_WARP_TIMEOUT_S);
        const bool released =
            changed_.wait_for(lock, limit, [&] { return generation_ != generation; });
        if (!released) {
            std::fprintf(stderr,
                         "cuda_emu: warp %u of block %u: a warp intrinsic not reached by every "
                         "lane within %d s (divergent __ballot_sync/__shfl_sync/__syncwarp?)\n",
                         threadIdx.x / 32, blockIdx.x, CUDA_EMU_WARP_TIMEOUT_S);
            std::abort();
        }
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::ptrdiff_t lanes_;
    std::ptrdiff_t arrived_ = 0;
    unsigned long long generation_ = 0;
};

struct Warp {
    std::unique_ptr<WarpBarrier> barrier;
    unsigned long long slots[32];
};
inline std::vector<Warp>* warps = nullptr;

// Run kernel() for every thread of a grid_size x block_size launch.
inline void launch(unsigned int grid_size, unsigned int block_size,
                   const std::function<void()>& kernel, std::size_t shared_bytes = 0) {
    gridDim = dim3{grid_size, 1, 1};
    blockDim = dim3{block_size, 1, 1};
    std::barrier<> barrier(block_size);
    block_barrier = &barrier;
    std::vector<unsigned char> shared(shared_bytes + 16, 0xA5);
    dynamic_shared = shared.data();
    std::vector<Warp> block_warps((block_size + 31) / 32);
    for (std::size_t w = 0; w < block_warps.size(); ++w) {
        const std::ptrdiff_t lanes = std::min<std::ptrdiff_t>(32, block_size - 32 * w);
        block_warps[w].barrier = std::make_unique<WarpBarrier>(lanes);
    }
    warps = &block_warps;
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
    dynamic_shared = nullptr;
    warps = nullptr;
}

// Lane `lane` of every warp publishes `bits`; returns the warp's 32 published values.
inline Warp& warp_exchange(unsigned long long bits, unsigned int mask) {
    if (mask != 0xffffffffu || blockDim.x % 32 != 0) {
        std::abort();  // only full warps with the full mask are emulated
    }
    Warp& warp = (*warps)[threadIdx.x / 32];
    warp.slots[threadIdx.x % 32] = bits;
    warp.barrier->arrive_and_wait();
    return warp;
}
// After reading the slots: nobody overwrites them before every lane has read.
inline void warp_done(Warp& warp) { warp.barrier->arrive_and_wait(); }
}  // namespace cuda_emu

// Dynamic shared memory of the launch (kernels/common.cuh declares it extern on the device).
inline unsigned char* gsh_dynamic_shared() { return cuda_emu::dynamic_shared; }

// ---- warp intrinsics (full warps, full mask) ----
inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    cuda_emu::Warp& warp = cuda_emu::warp_exchange(predicate != 0, mask);
    unsigned int ballot = 0;
    for (int lane = 0; lane < 32; ++lane) {
        ballot |= (warp.slots[lane] != 0 ? 1u : 0u) << lane;
    }
    cuda_emu::warp_done(warp);
    return ballot;
}
template <typename T>
inline T __shfl_sync(unsigned int mask, T value, int source_lane) {
    static_assert(sizeof(T) <= sizeof(unsigned long long));
    unsigned long long bits = 0;
    std::memcpy(&bits, &value, sizeof value);
    cuda_emu::Warp& warp = cuda_emu::warp_exchange(bits, mask);
    bits = warp.slots[source_lane & 31];
    cuda_emu::warp_done(warp);
    T result;
    std::memcpy(&result, &bits, sizeof result);
    return result;
}
inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    cuda_emu::warp_done(cuda_emu::warp_exchange(0, mask));
}

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
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long old = target.load();
    while (old > value && !target.compare_exchange_weak(old, value)) {
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
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
using std::fabs;
using std::frexp;
using std::ldexp;
