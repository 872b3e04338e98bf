/* gpu_probe.c - exit 0 when the CUDA runtime sees a device, 77 when not
 * (no driver, no device): lets tests/gpu/run.sh skip in a second, before
 * building any kernel. Prints why on stderr. */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		fprintf(stderr, "SKIP: %s: %s\n", cudaGetErrorName(e),
			cudaGetErrorString(e));
		return 77;
	}
	if (n == 0) {
		fprintf(stderr, "SKIP: no CUDA device\n");
		return 77;
	}
	fprintf(stderr, "%d CUDA device(s)\n", n);
	return 0;
}
