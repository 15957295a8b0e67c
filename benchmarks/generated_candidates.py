"""Candidates written on the fly for the throughput and preset benchmarks: many distinct sources
(so that every one is compiled or built anew) of known behaviour.

- vector_add plans (examples/vector_add's op): scalar, float2 or float4 accesses, 128 to 512
  threads a block, and `chain` dependent FMAs per element that leave the value as it was
  (fma(t, 0, x) is x for finite t; no compiler folds it without fast-math), which makes a
  candidate slower by a known amount of arithmetic while its result stays exact.
- a vector_add op whose reference itself carries a chain (chain_op): candidates with shorter
  chains are faster than it, longer ones slower, none on the boundary.
- ReLU plans for KernelBench level1/19_ReLU, and ModelNew ReLU solutions through load_inline,
  each with a distinct constant in a comment so that each is its own build.
Standard library only.
"""
import json
import os

VEC_PLAN = """/*kagent
{{
  "launch": [
    {{"kernel": "{name}", "grid": ["max(min(cdiv(cdiv(numel(out),{width}),{block}), 132*16), 1)"], "block": [{block}],
     "args": ["a", "b", "out", "i64:numel(out)"]}}
  ]
}}
*/
// Generated: width {width}, block {block}, chain {chain} (variant {tag}).
__device__ __forceinline__ float chained(float x) {{
  float t = x;
#pragma unroll 1
  for (int r = 0; r < {chain}; ++r) t = fmaf(t, 0.0f, x);
  return t;
}}

extern "C" __global__ void __launch_bounds__({block}) {name}(const float* __restrict__ a, const float* __restrict__ b,
                                                   float* __restrict__ out, long long n) {{
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const bool aligned = (((unsigned long long)a | (unsigned long long)b | (unsigned long long)out) & 15) == 0;
  const long long body = ({width} > 1 && aligned) ? n / {width} : 0;
  if ({width} == 4) {{
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (long long i = tid; i < body; i += stride) {{
      const float4 x = a4[i], y = b4[i];
      o4[i] = make_float4(chained(x.x) + y.x, chained(x.y) + y.y, chained(x.z) + y.z, chained(x.w) + y.w);
    }}
  }} else if ({width} == 2) {{
    const float2* a2 = reinterpret_cast<const float2*>(a);
    const float2* b2 = reinterpret_cast<const float2*>(b);
    float2* o2 = reinterpret_cast<float2*>(out);
    for (long long i = tid; i < body; i += stride) {{
      const float2 x = a2[i], y = b2[i];
      o2[i] = make_float2(chained(x.x) + y.x, chained(x.y) + y.y);
    }}
  }}
  for (long long i = body * {width} + tid; i < n; i += stride) out[i] = chained(a[i]) + b[i];
}}
"""

RELU_PLAN = """/*kagent
{{
  "launch": [
    {{"kernel": "{name}", "grid": ["max(min(cdiv(cdiv(numel(x),{width}),{block}), 132*16), 1)"], "block": [{block}],
     "args": ["x", "out", "i64:numel(x)"]}}
  ]
}}
*/
// Generated ReLU: width {width}, block {block} (variant {tag}). NaN passes through as in torch.relu.
__device__ __forceinline__ float op(float v) {{ return v < 0.0f ? 0.0f : v; }}

extern "C" __global__ void __launch_bounds__({block}) {name}(const float* __restrict__ x, float* __restrict__ out,
                                                   long long n) {{
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const bool aligned = (((unsigned long long)x | (unsigned long long)out) & 15) == 0;
  const long long body = ({width} == 4 && aligned) ? n / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (long long i = tid; i < body; i += stride) {{
    const float4 v = x4[i];
    o4[i] = make_float4(op(v.x), op(v.y), op(v.z), op(v.w));
  }}
  for (long long i = body * 4 + tid; i < n; i += stride) out[i] = op(x[i]);
}}
"""

MODELNEW_RELU = '''# Generated ModelNew ReLU through load_inline (variant {tag}): a float4 grid-stride kernel.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
// variant {tag}
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, long long n) {{
    long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {{
        float4 v = x4[i];
        v.x = v.x < 0.f ? 0.f : v.x; v.y = v.y < 0.f ? 0.f : v.y;
        v.z = v.z < 0.f ? 0.f : v.z; v.w = v.w < 0.f ? 0.f : v.w;
        o4[i] = v;
    }}
    for (long long i = n4 * 4 + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = x[i] < 0.f ? 0.f : x[i];
}}

torch::Tensor relu_cuda(torch::Tensor x) {{
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32);
    auto out = torch::empty_like(x);
    long long n = x.numel();
    int blocks = (int)std::min<long long>((n / 4 + 255) / 256 + 1, 132LL * 16);
    relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}}
"""

relu_ext = load_inline(name="kagent_bench_relu_{tag}", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                       cuda_sources=source, functions=["relu_cuda"], verbose=False, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x)
'''


def _write(folder, name, text):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def vector_add(folder, width, block, chain, tag):
    name = f"vadd_w{width}_b{block}_c{chain}_{tag}"
    return _write(folder, name + ".cu", VEC_PLAN.format(name=name, width=width, block=block, chain=chain, tag=tag))


def vector_add_set(folder, count, chains=(0, 2, 4, 8), tag="s"):
    """`count` distinct honest vector_add plans of about the same speed (a 50-100 us operator)."""
    out = []
    shapes = [(w, b, c) for c in chains for w in (4, 2, 1) for b in (256, 128, 512)]
    i = 0
    while len(out) < count:
        w, b, c = shapes[i % len(shapes)]
        out.append(vector_add(folder, w, b, c, f"{tag}{i}"))
        i += 1
    return out


def chain_op(folder, chain, vector_add_dir):
    """A vector_add op whose reference carries `chain` FMAs per element (its time is the eager
    baseline): op.json and ref.cu in `folder`."""
    ref = VEC_PLAN.format(name="vadd_ref_chain", width=1, block=256, chain=chain, tag="reference")
    _write(folder, "ref.cu", ref)
    with open(os.path.join(vector_add_dir, "op.json"), encoding="utf-8") as f:
        op = json.load(f)
    op["name"] = f"vector_add_chain{chain}"
    op["reference"] = {"cuda": "ref.cu"}
    return _write(folder, "op.json", json.dumps(op, indent=2))


def relu_set(folder, count, tag="r"):
    out = []
    shapes = [(w, b) for w in (4, 1) for b in (256, 128, 512, 1024)]
    for i in range(count):
        w, b = shapes[i % len(shapes)]
        name = f"relu_w{w}_b{b}_{tag}{i}"
        out.append(_write(folder, name + ".cu", RELU_PLAN.format(name=name, width=w, block=b, tag=f"{tag}{i}")))
    return out


def modelnew_relu_set(folder, count, tag="m"):
    return [_write(folder, f"relu_modelnew_{tag}{i}.py", MODELNEW_RELU.format(tag=f"{tag}{i}")) for i in range(count)]


SMALL_RELU_PROBLEM = '''# Generated KernelBench-style problem: ReLU of a {rows}x{cols} tensor (a launch-bound operator, where
# an evaluation's fixed costs are all there is to measure).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn({rows}, {cols})]


def get_init_inputs():
    return []
'''


def small_relu_problem(folder, rows=1, cols=128):
    """A problem file like KernelBench's level1/19_ReLU on a tiny tensor; the ReLU candidates above fit it."""
    return _write(folder, f"relu_{rows}x{cols}.py", SMALL_RELU_PROBLEM.format(rows=rows, cols=cols))
