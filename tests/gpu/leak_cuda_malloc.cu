// A CUDA runtime program that leaks device memory through cudaMalloc (keep_buffer keeps 20 buffers
// of 8 MiB) beside a temporary it frees, or through cudaMallocAsync with "async". For the GPU
// check (gpu_check.sh).
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vector>

static std::vector<void*> g_kept;

__attribute__((noinline)) void keep_buffer(bool async, cudaStream_t stream) {
  void* buffer = nullptr;
  cudaError_t error = async ? cudaMallocAsync(&buffer, 8 << 20, stream) : cudaMalloc(&buffer, 8 << 20);
  if (error != cudaSuccess) {
    fprintf(stderr, "allocation failed: %s\n", cudaGetErrorString(error));
    _exit(1);
  }
  g_kept.push_back(buffer);
}

__attribute__((noinline)) void use_temporary() {
  void* temporary = nullptr;
  cudaMalloc(&temporary, 4 << 20);
  cudaMemset(temporary, 0, 4 << 20);
  cudaFree(temporary);
}

int main(int argc, char** argv) {
  bool async = argc > 1 && strcmp(argv[1], "async") == 0;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  for (int i = 0; i < 20; ++i) {
    keep_buffer(async, stream);
    use_temporary();
    cudaStreamSynchronize(stream);
    usleep(100 * 1000);
  }
  printf("kept %zu buffers\n", g_kept.size());
  return 0;
}
