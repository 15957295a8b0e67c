# Hack (KernelBench's non_default_stream_kernel, with a kernel of its own instead of cuBLAS): the
# matrix product runs on a non-blocking stream of its own that nothing joins, so a timer that
# waits on the current stream only measures the launch. Problem: a matrix product (KernelBench
# level1/1, or test_modelnew.cpp's small copy). kagent: correct outputs (the worker waits for the
# whole device before exporting), flag timing_untrusted (the profiler sees the kernels end after
# the timed span), tier <= 1.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void matmul_kernel(const float* A, const float* B, float* C, int N) {
    __shared__ float As[16][16], Bs[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < N; t += 16) {
        As[threadIdx.y][threadIdx.x] = (row < N && t + threadIdx.x < N) ? A[row * N + t + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < N) ? B[(t + threadIdx.y) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = acc;
}

torch::Tensor side_matmul(torch::Tensor A, torch::Tensor B) {
    static cudaStream_t side = nullptr;
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    int N = A.size(0);
    auto C = torch::empty({N, N}, A.options());
    dim3 block(16, 16), grid((N + 15) / 16, (N + 15) / 16);
    matmul_kernel<<<grid, block, 0, side>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), N);
    return C;  // not joined: the current stream never waits for `side`
}
"""
ext = load_inline(name="kagent_fixture_side_stream", cpp_sources="torch::Tensor side_matmul(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=source, functions=["side_matmul"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.side_matmul(A, B)
