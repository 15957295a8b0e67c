#include "conv_step.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "../device.hpp"
#include "kagent/gpu/libraries.hpp"

namespace kagent::runner {

#if KAGENT_HAVE_CUDNN
namespace {

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<int> ints(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

class ConvRunner final : public LibraryStepRunner {
 public:
  ConvRunner(const CudnnApi& dnn, const ConvStep& c, const ConvShape& s, const ConvPointers& p, std::string where)
      : dnn_(dnn), p_(p), transposed_(c.transposed), relu_(c.activation == Activation::relu), where_(std::move(where)) {
    // The destructor does not run when the constructor throws: release what was made so far.
    try {
      build(c, s);
    } catch (...) {
      release();
      throw;
    }
  }

  ~ConvRunner() override { release(); }

 private:
  void build(const ConvStep& c, const ConvShape& s) {
    check(dnn_.cudnnCreate(&handle_), "cudnnCreate");
    // cuDNN's Nd descriptors start at 2 spatial dimensions: a 1-D convolution is a 2-D one of height 1.
    std::vector<int64_t> in = s.in, out = s.out, kernel = s.kernel, stride = s.stride, pad = s.padding,
                         dil = s.dilation;
    if (s.spatial == 1) {
      in.insert(in.begin(), 1);
      out.insert(out.begin(), 1);
      kernel.insert(kernel.begin(), 1);
      stride.insert(stride.begin(), 1);
      pad.insert(pad.begin(), 0);
      dil.insert(dil.begin(), 1);
    }
    const cudnnDataType_t type = cudnn_type(s.dtype);
    std::vector<int> x_dims = {static_cast<int>(s.n), static_cast<int>(s.c_in)};
    std::vector<int> y_dims = {static_cast<int>(s.n), static_cast<int>(s.c_out)};
    // The filter: [C_out, C_in / g, k...] forward; for a transposed convolution the forward one it
    // is the gradient of has K = C_in and C = C_out / g: the same [C_in, C_out / g, k...] tensor.
    std::vector<int> w_dims = transposed_
                                  ? std::vector<int>{static_cast<int>(s.c_in), static_cast<int>(s.c_out / s.groups)}
                                  : std::vector<int>{static_cast<int>(s.c_out), static_cast<int>(s.c_in / s.groups)};
    for (size_t i = 0; i < in.size(); ++i) {
      x_dims.push_back(static_cast<int>(in[i]));
      y_dims.push_back(static_cast<int>(out[i]));
      w_dims.push_back(static_cast<int>(kernel[i]));
    }
    x_desc_ = tensor(type, x_dims);
    y_desc_ = tensor(type, y_dims);
    check(dnn_.cudnnCreateFilterDescriptor(&w_desc_), "cudnnCreateFilterDescriptor");
    check(dnn_.cudnnSetFilterNdDescriptor(w_desc_, type, CUDNN_TENSOR_NCHW, static_cast<int>(w_dims.size()),
                                          w_dims.data()),
          "the filter descriptor");
    check(dnn_.cudnnCreateConvolutionDescriptor(&conv_desc_), "cudnnCreateConvolutionDescriptor");
    const std::vector<int> pad_i = ints(pad), stride_i = ints(stride), dil_i = ints(dil);
    // PyTorch's convolution is cuDNN's cross-correlation; products accumulate in fp32.
    check(
        dnn_.cudnnSetConvolutionNdDescriptor(conv_desc_, static_cast<int>(pad_i.size()), pad_i.data(), stride_i.data(),
                                             dil_i.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "the convolution descriptor");
    check(dnn_.cudnnSetConvolutionGroupCount(conv_desc_, static_cast<int>(s.groups)), "the group count");
    // f32 under fp32: FMA only (no tensor cores, so no TF32); TF32 where the plan asked for it;
    // half types: tensor cores.
    math_ = s.dtype != DType::f32            ? CUDNN_TENSOR_OP_MATH
            : c.compute == StepCompute::tf32 ? CUDNN_DEFAULT_MATH
                                             : CUDNN_FMA_MATH;
    check(dnn_.cudnnSetConvolutionMathType(conv_desc_, math_), "the math type");
    if (!c.bias.empty()) {
      std::vector<int> b_dims(y_dims.size(), 1);
      b_dims[1] = static_cast<int>(s.c_out);
      bias_desc_ = tensor(type, b_dims);
    }
    if (relu_) {
      check(dnn_.cudnnCreateActivationDescriptor(&act_desc_), "cudnnCreateActivationDescriptor");
      check(dnn_.cudnnSetActivationDescriptor(act_desc_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
            "the ReLU descriptor");
    }
    pick_algorithm();
    const bool searched = search_algorithm();
    description_ = fmt::format("cuDNN {}conv{}d {} ({}), algorithm {}{}{}{}", transposed_ ? "transposed " : "",
                               s.spatial, dtype_name(s.dtype),
                               math_ == CUDNN_FMA_MATH       ? "IEEE fp32"
                               : math_ == CUDNN_DEFAULT_MATH ? "TF32 allowed"
                                                             : "tensor cores",
                               algo_, searched ? " (fastest measured)" : " (heuristic)",
                               c.bias.empty() ? "" : ", +bias", relu_ ? ", relu" : "");
  }

  void release() noexcept {
    if (act_desc_) dnn_.cudnnDestroyActivationDescriptor(act_desc_);
    for (cudnnTensorDescriptor_t d : {x_desc_, y_desc_, bias_desc_})
      if (d) dnn_.cudnnDestroyTensorDescriptor(d);
    if (w_desc_) dnn_.cudnnDestroyFilterDescriptor(w_desc_);
    if (conv_desc_) dnn_.cudnnDestroyConvolutionDescriptor(conv_desc_);
    if (handle_) dnn_.cudnnDestroy(handle_);
  }

 public:
  size_t workspace_bytes() const override { return workspace_; }
  const std::string& description() const override { return description_; }

  void enqueue(CUstream stream, CUdeviceptr workspace, size_t workspace_bytes, const std::string& context) override {
    const float one = 1.f, zero = 0.f;
    auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void*>(p); };
    run(dnn_.cudnnSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), context, "cudnnSetStream");
    if (!transposed_) {
      run(dnn_.cudnnConvolutionForward(handle_, &one, x_desc_, ptr(p_.x), w_desc_, ptr(p_.w), conv_desc_,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo_), ptr(workspace), workspace_bytes,
                                       &zero, y_desc_, ptr(p_.y)),
          context, "cudnnConvolutionForward");
    } else {
      // dx = conv^T(w, dy): our x is the "dy", our y the "dx".
      run(dnn_.cudnnConvolutionBackwardData(handle_, &one, w_desc_, ptr(p_.w), x_desc_, ptr(p_.x), conv_desc_,
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_), ptr(workspace),
                                            workspace_bytes, &zero, y_desc_, ptr(p_.y)),
          context, "cudnnConvolutionBackwardData");
    }
    if (bias_desc_)
      run(dnn_.cudnnAddTensor(handle_, &one, bias_desc_, ptr(p_.bias), &one, y_desc_, ptr(p_.y)), context,
          "cudnnAddTensor (bias)");
    if (act_desc_)
      run(dnn_.cudnnActivationForward(handle_, act_desc_, &one, y_desc_, ptr(p_.y), &zero, y_desc_, ptr(p_.y)), context,
          "cudnnActivationForward (relu)");
  }

 private:
  void check(cudnnStatus_t st, const char* what) const {
    if (st != CUDNN_STATUS_SUCCESS)
      throw PlanError(fmt::format("{}: {}: {}", where_, what, dnn_.cudnnGetErrorString(st)));
  }
  void run(cudnnStatus_t st, const std::string& context, const char* what) const {
    if (st != CUDNN_STATUS_SUCCESS)
      throw CudaError(CUDA_ERROR_UNKNOWN,
                      fmt::format("{}: {}: {} failed: {}", context, where_, what, dnn_.cudnnGetErrorString(st)), false);
  }

  cudnnTensorDescriptor_t tensor(cudnnDataType_t type, const std::vector<int>& dims) {
    cudnnTensorDescriptor_t d = nullptr;
    check(dnn_.cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    const std::vector<int> strides = packed_strides(dims);
    check(dnn_.cudnnSetTensorNdDescriptor(d, type, static_cast<int>(dims.size()), dims.data(), strides.data()),
          "a tensor descriptor");
    return d;
  }

  // The heuristic's first algorithm that works with this math type and fits the workspace limit.
  void pick_algorithm() {
    constexpr int kWant = 16;
    int found = 0;
    std::string seen;
    auto accept = [&](auto status, auto math, size_t memory, int algo) {
      seen += fmt::format("{}{}:{}", seen.empty() ? "" : ", ", algo, static_cast<int>(status));
      if (status != CUDNN_STATUS_SUCCESS || memory > kLibraryWorkspaceLimit) return false;
      // Under fp32 only FMA algorithms: a tensor-op result would be TF32.
      if (math_ == CUDNN_FMA_MATH && math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) return false;
      algo_ = algo;
      workspace_ = memory;
      return true;
    };
    if (!transposed_) {
      cudnnConvolutionFwdAlgoPerf_t perf[kWant];
      check(dnn_.cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_desc_, w_desc_, conv_desc_, y_desc_, kWant, &found,
                                                        perf),
            "cudnnGetConvolutionForwardAlgorithm_v7");
      for (int i = 0; i < found; ++i)
        if (accept(perf[i].status, perf[i].mathType, perf[i].memory, perf[i].algo)) return;
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kWant];
      check(dnn_.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, w_desc_, x_desc_, conv_desc_, y_desc_, kWant,
                                                             &found, perf),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      for (int i = 0; i < found; ++i)
        if (accept(perf[i].status, perf[i].mathType, perf[i].memory, perf[i].algo)) return;
    }
    throw PlanError(fmt::format("{}: cuDNN has no algorithm for this convolution (algorithm:status {})", where_,
                                seen.empty() ? "none" : seen));
  }

  // Times every algorithm on this step's own buffers (cudnnFind...Ex: once, while the plan is
  // prepared, outside any timed region) and keeps the fastest one that the precision allows and
  // whose workspace fits; PyTorch (benchmark mode off) stops at the heuristic's first pick, which is
  // not always the fastest. False, keeping the heuristic's pick, when the search could not run.
  bool search_algorithm() {
    constexpr int kWant = 16;
    int found = 0;
    std::unique_ptr<DeviceBuffer> ws;
    try {
      ws = std::make_unique<DeviceBuffer>(kLibraryWorkspaceLimit);
    } catch (const std::exception&) {
      return false;  // no room for a search workspace: the heuristic's pick fits its own
    }
    auto ptr = [](CUdeviceptr q) { return reinterpret_cast<void*>(q); };
    const int heuristic = algo_;
    const size_t heuristic_ws = workspace_;
    auto accept = [&](auto status, auto math, size_t memory, int algo) {
      if (status != CUDNN_STATUS_SUCCESS || memory > kLibraryWorkspaceLimit) return false;
      if (math_ == CUDNN_FMA_MATH && math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) return false;
      algo_ = algo;
      workspace_ = memory;
      return true;
    };
    // The search runs on the handle's default stream (the runner's context is current).
    if (dnn_.cudnnSetStream(handle_, nullptr) != CUDNN_STATUS_SUCCESS) return false;
    if (!transposed_) {
      cudnnConvolutionFwdAlgoPerf_t perf[kWant];
      if (dnn_.cudnnFindConvolutionForwardAlgorithmEx(handle_, x_desc_, ptr(p_.x), w_desc_, ptr(p_.w), conv_desc_,
                                                      y_desc_, ptr(p_.y), kWant, &found, perf, ptr(ws->get()),
                                                      ws->bytes()) != CUDNN_STATUS_SUCCESS)
        return false;
      for (int i = 0; i < found; ++i)
        if (accept(perf[i].status, perf[i].mathType, perf[i].memory, perf[i].algo)) return true;
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kWant];
      if (dnn_.cudnnFindConvolutionBackwardDataAlgorithmEx(handle_, w_desc_, ptr(p_.w), x_desc_, ptr(p_.x), conv_desc_,
                                                           y_desc_, ptr(p_.y), kWant, &found, perf, ptr(ws->get()),
                                                           ws->bytes()) != CUDNN_STATUS_SUCCESS)
        return false;
      for (int i = 0; i < found; ++i)
        if (accept(perf[i].status, perf[i].mathType, perf[i].memory, perf[i].algo)) return true;
    }
    algo_ = heuristic;
    workspace_ = heuristic_ws;
    return false;
  }

  const CudnnApi& dnn_;
  ConvPointers p_;
  bool transposed_, relu_;
  std::string where_, description_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, bias_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnActivationDescriptor_t act_desc_ = nullptr;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  int algo_ = 0;
  size_t workspace_ = 0;
};

}  // namespace

std::unique_ptr<LibraryStepRunner> make_conv_runner(const ConvStep& c, const ConvShape& s, const ConvPointers& p,
                                                    const std::string& where) {
  std::string why;
  const CudnnApi* dnn = load_cudnn(&why);
  if (!dnn) throw PlanError(fmt::format("{}: {}", where, why));
  return std::make_unique<ConvRunner>(*dnn, c, s, p, where);
}
#else
std::unique_ptr<LibraryStepRunner> make_conv_runner(const ConvStep&, const ConvShape&, const ConvPointers&,
                                                    const std::string& where) {
  std::string why;
  load_cudnn(&why);
  throw PlanError(fmt::format("{}: {}", where, why));
}
#endif

}  // namespace kagent::runner
