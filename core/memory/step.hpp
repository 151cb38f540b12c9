// The step as the memory and time terms read it: the configuration, and what they all derive from it, computed once
// per estimate (step.cpp) — the stage's parameter counts, the element sizes, the tokens, the layer's projections, the
// stage's trainable tensors — instead of once per term (llm.c's one table of buffers, read by every kernel).
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "model/architecture.hpp"
#include "setup/config.hpp"

namespace vramcalc {

struct Step : Config {
    // Implicit: a term asked about a configuration derives its step. A step is never copied, so what is derived
    // always belongs to the configuration beside it; change a copy of the Config and derive again.
    Step(const Config&);
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

    double params_on_stage = 0;     // the stage's parameters on one GPU before ZeRO/FSDP sharding
    double trainable_on_stage = 0;  // the stage's trainable parameters on one GPU
    double adapter_params = 0;      // LoRA's adapters in the whole model (0 when every weight trains)
    // Bytes per element (memory_terms.hpp): weights, trainable weights, gradients, matmul inputs and outputs, the
    // residual stream.
    double weight_element = 0, trainable_element = 0, gradient_element = 0, compute_element = 0, residual_element = 0;
    double tokens = 0;         // of one micro-batch on one GPU (context parallelism splits every sequence cp ways)
    double data_parallel = 0;  // the data-parallel replicas ZeRO and FSDP shard over
    const ActivationCost* activation = nullptr;  // the MLP activation the model's code runs (activation_run)

    // Derived the first time a term asks (most estimates never need the lists).
    const std::vector<Tensor>& trainable() const;  // the stage's trainable tensors, each split tp ways, module order
    const std::vector<Linear>& attention_linears() const;  // one layer's projections (architecture.hpp)
    const std::vector<Linear>& mlp_linears() const;
    const std::vector<Linear>& layer_linears() const;
    const std::vector<Linear>& adapter_linears() const;  // those LoRA can adapt
    // The same step with checkpointing off (what a layer saves whole) and with tp = 1 (the layer as one GPU runs it).
    const Step& saving_everything() const;
    const Step& on_one_gpu() const;

private:
    mutable std::unique_ptr<const Step> saving_everything_, on_one_gpu_;
    mutable std::optional<std::vector<Tensor>> trainable_;
    mutable std::optional<std::vector<Linear>> attention_, mlp_, layer_, adapter_;
};

}  // namespace vramcalc
