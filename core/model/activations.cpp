#include "model/activations.hpp"

#include <iterator>

namespace vramcalc {

namespace {

// Saved tensors follow each function's autograd graph in transformers/activations.py (5.18): a fused ATen
// kernel (silu, gelu, gelu with approximate="tanh") saves its input; the Python composites save every
// intermediate a product or tanh needs. Checked against tests/validation/measured_activations.json.
constexpr ActivationCost kTable[] = {
    {Activation::silu, "silu", 1, false, 0, 2},
    {Activation::gelu, "gelu", 1, false, 0, 2},
    {Activation::gelu_tanh, "gelu_pytorch_tanh", 1, false, 0, 2},
    // 0.5*x * (1 + tanh(c*(x + 0.044715*x^3))): x (for pow; fp32 under CUDA autocast), tanh's output,
    // 0.5*x and 1+tanh; pow runs in fp32 under CUDA autocast and promotes the tanh chain with it.
    {Activation::gelu_new, "gelu_new", 4, false, 3, 3},
    {Activation::gelu_accurate, "gelu_accurate", 4, false, 3, 3},
    // 0.5*x * (1 + tanh(x*c * (1 + 0.044715*x*x))): seven intermediates, no pow.
    {Activation::gelu_fast, "gelu_fast", 7, false, 0, 3},
    // x * sigmoid(1.702*x): x and the sigmoid's output.
    {Activation::quick_gelu, "quick_gelu", 2, false, 0, 2},
    // The Python erf and tanh forms (gelu_python, gelu_python_tanh) and the clipped GELU keep their
    // intermediates too; the rest are single ATen kernels.
    {Activation::gelu_python, "gelu_python", 3, false, 0, 6},
    {Activation::gelu_python_tanh, "gelu_python_tanh", 4, false, 3, 3},
    {Activation::gelu_10, "gelu_10", 2, false, 0, 2},
    {Activation::relu, "relu", 0, true, 0, 1},
    {Activation::relu6, "relu6", 1, false, 0, 2},
    {Activation::leaky_relu, "leaky_relu", 1, false, 0, 2},
    {Activation::tanh, "tanh", 0, true, 0, 2},
    {Activation::sigmoid, "sigmoid", 0, true, 0, 2},
    {Activation::mish, "mish", 1, false, 0, 2},
    {Activation::linear, "linear", 0, false, 0, 0},
    // square(relu(x)): relu's output, for square's backward (and relu's own, the same tensor).
    {Activation::relu2, "relu2", 1, false, 0, 2},
    // gpt-oss's clamped GLU over the interleaved gate_up output (modeling_gpt_oss.py GptOssExperts):
    // in units of the expert width, with the gate_up output (2) and the product counted by the MLP: the
    // clamped gate, sigmoid(gate * alpha), glu and up + 1.
    {Activation::gelu_glu_oss, "gpt_oss_glu", 4, false, 0, 3},
    // BloomGelu: a custom autograd.Function that saves its input; its backward builds tanh, 1 - tanh^2 and
    // the products in Python, five input-sized tensors beside the incoming gradient.
    {Activation::bloom_gelu, "bloom_gelu", 1, false, 0, 6},
};

}  // namespace

const std::vector<ActivationCost>& activation_table() {
    static const std::vector<ActivationCost> table(std::begin(kTable), std::end(kTable));
    return table;
}

const ActivationCost& activation_cost(Activation a) {
    for (const ActivationCost& c : kTable)
        if (c.id == a) return c;
    return kTable[0];
}

const ActivationCost* find_activation(const std::string& name) {
    if (name == "swish") return &activation_cost(Activation::silu);
    for (const ActivationCost& c : kTable)
        if (name == c.name) return &c;
    return nullptr;
}

std::string activation_names() {
    std::string s;
    for (const ActivationCost& c : kTable) s += (s.empty() ? "\"" : ", \"") + std::string(c.name) + "\"";
    return s;
}

}  // namespace vramcalc
