#include "memory/step.hpp"

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"

namespace vramcalc {

using namespace detail;

// Megatron-LM theoretical_memory_usage.py: the first stage holds the embedding and layers/pp; tp splits all.
Step::Step(const Config& config) : Config(config) {
    const Architecture& a = model;
    params_on_stage = double(layers_params(a)) * layer_share(*this);
    if (holds_embedding(*this)) params_on_stage += double(embedding_params(a));
    if (holds_head(*this)) params_on_stage += double(norm_params(a) + lm_head_params(a));
    params_on_stage /= double(tp);
    trainable_on_stage = params_on_stage;
    if (!trains_all_weights(*this)) {
        trainable_on_stage = 0;
        for (const Tensor& t : trainable()) trainable_on_stage += double(t.numel()) * double(t.count);
        adapter_params = double(lora_params(model, finetune.rank, finetune.targets));
    }
    weight_element = weight_element_bytes(*this), trainable_element = trainable_element_bytes(*this);
    gradient_element = gradient_element_bytes(*this), compute_element = compute_element_bytes(*this);
    residual_element = residual_element_bytes(*this);
    tokens = double(micro_batch) * double(seq_len) / double(cp);
    data_parallel = double(vramcalc::data_parallel(*this));
    activation = &activation_run(model);
}

// The trainable tensors of the estimated pipeline stage, each split tp ways. Tensors outside the layers
// come first (embeddings) or last (final norm, lm_head) in parameter_tensors' module order.
const std::vector<Tensor>& Step::trainable() const {
    if (trainable_) return *trainable_;
    const std::vector<Tensor> all = trains_all_weights(*this) ? parameter_tensors(model)
                                                              : lora_tensors(model, finetune.rank, finetune.targets);
    std::vector<Tensor>& stage = trainable_.emplace();
    bool after_layers = false;
    for (Tensor t : all) {
        if (t.in_layers) {
            t.count = t.count * layers_on_stage(*this) / model.layers;
            after_layers = true;
        } else if (!(after_layers ? holds_head(*this) : holds_embedding(*this))) {
            continue;
        }
        t.rows = (t.rows + tp - 1) / tp;
        stage.push_back(t);
    }
    return stage;
}

const std::vector<Linear>& Step::attention_linears() const {
    if (!attention_) attention_ = vramcalc::attention_linears(model);
    return *attention_;
}
const std::vector<Linear>& Step::mlp_linears() const {
    if (!mlp_) mlp_ = vramcalc::mlp_linears(model);
    return *mlp_;
}
const std::vector<Linear>& Step::layer_linears() const {
    if (layer_) return *layer_;
    layer_ = attention_linears();
    layer_->insert(layer_->end(), mlp_linears().begin(), mlp_linears().end());
    return *layer_;
}

const std::vector<Linear>& Step::adapter_linears() const {
    if (!adapter_) adapter_ = vramcalc::adapter_linears(model);
    return *adapter_;
}

const Step& Step::saving_everything() const {
    if (checkpointing == Checkpointing::none) return *this;
    if (!saving_everything_) {
        Config c = *this;
        c.checkpointing = Checkpointing::none;
        saving_everything_ = std::make_unique<const Step>(c);
    }
    return *saving_everything_;
}

const Step& Step::on_one_gpu() const {
    if (tp == 1) return *this;
    if (!on_one_gpu_) {
        Config c = *this;
        c.tp = 1;
        on_one_gpu_ = std::make_unique<const Step>(c);
    }
    return *on_one_gpu_;
}

}  // namespace vramcalc
