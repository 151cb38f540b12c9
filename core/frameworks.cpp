#include "frameworks.hpp"

namespace vramcalc {

namespace {

// FSDP: transformers 5.18's Trainer uses accelerate's FSDP 1 by default and wraps LoRA adapters apart
// (distributed/fsdp.py update_fsdp_plugin_peft); torchtune shards with FSDP 2 (training/_distributed.py
// shard_model); LitGPT's FSDPStrategy wraps each Block with FSDP 1.
// Each logits path from the stack's training step, measured on tiny models (tests/validation/stacks/):
// - hf (transformers 5.18 loss_utils.ForCausalLMLoss): 16-bit logits, their fp32 upcast and the fp32
//   log-softmax at the end of forward; at its backward the saved output, the incoming gradient and the result.
// - torchtune 0.6.1 (recipes/*_single_device.py, modules/loss/ce_chunked_output_loss.py): the output projection
//   runs per chunk, each chunk is upcast and its log-softmax saved; only one chunk's upcast is alive at once.
// - LitGPT 0.5.13 (finetune/full.py, finetune/lora.py with Fabric's bf16 precision): Fabric casts the output
//   to fp32, the loop's `logits` variable keeps the previous step's fp32 logits alive until the next forward
//   returns, chunked_cross_entropy saves an fp32 log-softmax per 128-row chunk; lora.py also runs lm_head per
//   chunk, so the backward holds one chunk's gradients instead of the whole logits'.
const std::vector<FrameworkProfile> kProfiles = {
    {Framework::hf, "hf", "transformers 5.18 + PEFT 0.21", "bf16-mixed", "", AdapterDtype::fp32, Loss::full, 8, false, false, 1, FsdpWrap::adapters_apart,
     /*full*/ {{1, 1, 1, 0}, {0, 0, 3, 0}, {}},
     /*chunked*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}},
     /*chunked_lm_head*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}}},
    // torchtune's model upcasts the whole output itself when the loss is not chunked (no 16-bit copy stays).
    {Framework::torchtune, "torchtune", "torchtune 0.6.1", "bf16-true", "torchtune", AdapterDtype::base, Loss::chunked, 8, false, true, 2, FsdpWrap::layers,
     /*full*/ {{0, 0, 2, 0}, {0, 0, 3, 0}, {}},
     /*chunked*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}},
     /*chunked_lm_head*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}}},
    // torchtitan (train.py, models/llama3): FSDP 2 with bf16 parameters and fp32 reduction, the output
    // upcast for cross_entropy as transformers does (the step deletes the 16-bit output before backward).
    {Framework::torchtitan, "torchtitan", "torchtitan 0.1", "bf16-mixed", "torchtitan", AdapterDtype::base, Loss::full, 8, false, false, 2, FsdpWrap::layers,
     /*full*/ {{1, 1, 1, 0}, {0, 0, 3, 0}, {}},
     /*chunked*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}},
     /*chunked_lm_head*/ {{1, 0, 1, 1}, {0, 0, 1, 2}, {}}},
    {Framework::litgpt, "litgpt", "LitGPT 0.5.13", "bf16-mixed", "litgpt", AdapterDtype::base, Loss::chunked, 0, true, false, 1, FsdpWrap::layers,
     /*full*/ {{1, 1, 1, 0}, {0, 0, 4, 0}, {0, 0, 1, 0}},
     /*chunked*/ {{1, 1, 1, 0}, {0, 0, 3, 0}, {0, 0, 1, 0}},
     /*chunked_lm_head*/ {{1, 1, 1, 0}, {0, 0, 2, 2}, {0, 0, 1, 0}}},
};

}  // namespace

const std::vector<FrameworkProfile>& framework_profiles() { return kProfiles; }

const FrameworkProfile& framework_profile(Framework f) {
    for (const FrameworkProfile& p : kProfiles)
        if (p.id == f) return p;
    return kProfiles[0];
}

const FrameworkProfile* find_framework(const std::string& name) {
    for (const FrameworkProfile& p : kProfiles)
        if (name == p.name) return &p;
    return nullptr;
}

}  // namespace vramcalc
