// The MLP activation functions of transformers' ACT2FN, and what each saves for backward.
#pragma once
#include <string>
#include <vector>

namespace vramcalc {

enum class Activation {
    silu, gelu, gelu_tanh, gelu_new, gelu_fast, quick_gelu, gelu_accurate, gelu_python, gelu_python_tanh, gelu_10,
    relu, relu2, relu6, leaky_relu, tanh, sigmoid, mish, linear, gelu_glu_oss, bloom_gelu
};

// What one activation keeps for backward, in tensors of the activation's input size (its dtype), and how
// many of those CUDA autocast promotes to fp32 (ops on autocast's fp32 list, e.g. pow).
struct ActivationCost {
    Activation id;
    const char* name;        // transformers' ACT2FN key (or the family's own function)
    double saved;            // saved tensors besides the output
    bool saves_output;       // the output itself is saved (then the next matmul's input costs nothing more)
    double cuda_fp32_saved;  // of `saved`, kept in fp32 under CUDA autocast
    double backward_temps;   // input-sized temporaries alive at once in its backward
};

const std::vector<ActivationCost>& activation_table();  // transformers' names in ACT2FN order
const ActivationCost& activation_cost(Activation);
const ActivationCost* find_activation(const std::string& name);  // nullptr when unknown
std::string activation_names();                                  // "silu", "gelu", ... for messages

}  // namespace vramcalc
