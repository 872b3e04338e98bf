/*
 * simt/cuda_runtime.h - just enough of the CUDA programming model, on the
 * CPU, to run cuda/kernels.cu and tests/gpu/gpu_check.cu without a GPU
 * (tests/cuda/simt.sh). Each CUDA thread of a block is a std::thread,
 * kept for later launches of the same block size; blocks run one after
 * another; __syncthreads and the warp collectives
 * (__shfl_xor_sync, __ballot_sync, __any_sync) are barriers over the block
 * or the warp with an exchange slot per lane; __shared__ is static (one
 * block at a time). Launches (`k<<<g, b, 0, s>>>(...)`) are rewritten to
 * simt_launch() by simt.sh. "Device" memory is host memory.
 *
 * What this checks: the kernels' indexing, lane/warp logic, block scans,
 * tails and alignment paths, against the CPU path. What it does not: the
 * device's own float instructions (tp_kmath.h takes its host branch here),
 * memory-model races between blocks, performance.
 */
#ifndef TP_SIMT_CUDA_RUNTIME_H
#define TP_SIMT_CUDA_RUNTIME_H

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct dim3 {
	unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

struct float4 {
	float x, y, z, w;
};
struct uint4 {
	unsigned x, y, z, w;
};
struct char4 {
	signed char x, y, z, w;
};
struct uint2 {
	unsigned x, y;
};
inline float4 make_float4(float a, float b, float c, float d)
{
	return {a, b, c, d};
}
inline char4 make_char4(signed char a, signed char b, signed char c,
			signed char d)
{
	return {a, b, c, d};
}
inline uint2 make_uint2(unsigned a, unsigned b)
{
	return {a, b};
}

/* ---- block and warp synchronisation ------------------------------------ */

struct simt_warp {
	std::barrier<> bar{32};
	uint64_t slot[32];
};
inline std::barrier<> *simt_block_bar;
inline simt_warp *simt_warps;

inline void __syncthreads()
{
	simt_block_bar->arrive_and_wait();
}

template <class T> inline T __shfl_xor_sync(unsigned, T v, int off)
{
	simt_warp &w = simt_warps[threadIdx.x / 32];
	unsigned lane = threadIdx.x % 32;
	T r;

	memcpy(&w.slot[lane], &v, sizeof(v));
	w.bar.arrive_and_wait();
	memcpy(&r, &w.slot[lane ^ (unsigned)off], sizeof(r));
	w.bar.arrive_and_wait();
	return r;
}

inline unsigned __ballot_sync(unsigned, int pred)
{
	simt_warp &w = simt_warps[threadIdx.x / 32];
	unsigned lane = threadIdx.x % 32, b = 0;

	w.slot[lane] = pred != 0;
	w.bar.arrive_and_wait();
	for (unsigned l = 0; l < 32; l++)
		b |= (unsigned)w.slot[l] << l;
	w.bar.arrive_and_wait();
	return b;
}

inline int __any_sync(unsigned m, int pred)
{
	return __ballot_sync(m, pred) != 0;
}

inline int __popc(unsigned x)
{
	return __builtin_popcount(x);
}

inline unsigned atomicAdd(unsigned *p, unsigned v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* ---- launches ---------------------------------------------------------- */

struct simt_cfg_t {
	unsigned grid, block;
};
inline simt_cfg_t simt_cfg(unsigned grid, unsigned block, size_t = 0,
			   void * = nullptr)
{
	return {grid, block};
}

/* The threads of one block size, made once and kept for every launch with
 * that block size: each block of a launch is one round (start barrier,
 * the kernel on every thread, end barrier). A thread per CUDA thread made
 * anew for each block cost ~200,000 thread creations per run. The threads
 * are detached and live until the process exits. */
struct simt_pool {
	unsigned n;
	std::barrier<> start, end, bar;
	std::vector<simt_warp> warps;
	std::function<void()> fn;
	unsigned b = 0;

	explicit simt_pool(unsigned nthreads)
	    : n(nthreads), start((ptrdiff_t)nthreads + 1),
	      end((ptrdiff_t)nthreads + 1), bar((ptrdiff_t)nthreads),
	      warps((nthreads + 31) / 32)
	{
		for (unsigned t = 0; t < n; t++)
			std::thread([this, t] {
				threadIdx = dim3{t, 0, 0};
				for (;;) {
					start.arrive_and_wait();
					blockIdx = dim3{b, 0, 0};
					fn();
					end.arrive_and_wait();
				}
			}).detach();
	}
};

inline simt_pool *simt_pool_for(unsigned nthreads)
{
	static std::vector<simt_pool *> pools;

	for (simt_pool *p : pools)
		if (p->n == nthreads)
			return p;
	pools.push_back(new simt_pool(nthreads));
	return pools.back();
}

template <class K, class... A>
inline void simt_launch(K kernel, simt_cfg_t c, A... args)
{
	gridDim = dim3{c.grid, 1, 1};
	blockDim = dim3{c.block, 1, 1};
	if (!c.grid || !c.block)
		return;
	simt_pool *p = simt_pool_for(c.block);
	p->fn = [=] { kernel(args...); };
	simt_block_bar = &p->bar;
	simt_warps = p->warps.data();
	for (unsigned b = 0; b < c.grid; b++) {
		p->b = b;
		p->start.arrive_and_wait();
		p->end.arrive_and_wait();
	}
}

/* ---- runtime API ------------------------------------------------------- */

enum cudaError_t {
	cudaSuccess = 0,
	cudaErrorNoDevice = 100,
	cudaErrorInsufficientDriver = 35,
};
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
enum cudaMemcpyKind {
	cudaMemcpyHostToDevice,
	cudaMemcpyDeviceToHost,
	cudaMemcpyDeviceToDevice,
	cudaMemcpyDefault
};
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount };
enum cudaMemoryType {
	cudaMemoryTypeUnregistered,
	cudaMemoryTypeHost,
	cudaMemoryTypeDevice,
	cudaMemoryTypeManaged
};
struct cudaPointerAttributes {
	cudaMemoryType type;
};
struct cudaDeviceProp {
	char name[256];
	int major, minor;
	size_t totalGlobalMem;
};

inline const char *cudaGetErrorName(cudaError_t)
{
	return "simtError";
}
inline const char *cudaGetErrorString(cudaError_t)
{
	return "simt error";
}
inline cudaError_t cudaGetLastError()
{
	return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int *d)
{
	*d = 0;
	return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr, int)
{
	*v = 1; /* one SM: small grids, few threads */
	return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
	snprintf(p->name, sizeof(p->name), "simt CPU emulation");
	p->major = 0;
	p->minor = 0;
	p->totalGlobalMem = 0;
	return cudaSuccess;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a,
					    const void *)
{
	a->type = cudaMemoryTypeUnregistered;
	return cudaSuccess;
}
template <class T> inline cudaError_t cudaMalloc(T **p, size_t n)
{
	*p = (T *)malloc(n ? n : 1); /* exact: ASan sees overruns */
	return *p ? cudaSuccess : cudaErrorNoDevice;
}
inline cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind)
{
	memmove(d, s, n);
	return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n,
				   cudaMemcpyKind, cudaStream_t = nullptr)
{
	memmove(d, s, n);
	return cudaSuccess;
}
inline cudaError_t cudaMemset(void *d, int v, size_t n)
{
	memset(d, v, n);
	return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n,
				   cudaStream_t = nullptr)
{
	memset(d, v, n);
	return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t)
{
	return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize()
{
	return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	*e = nullptr;
	return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t)
{
	return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = nullptr)
{
	return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t)
{
	return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
	*ms = 1.0f;
	return cudaSuccess;
}

#endif
