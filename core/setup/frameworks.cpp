#include "setup/frameworks.hpp"

#include <cctype>

namespace vramcalc {

namespace {

// FSDP: transformers' Trainer builds accelerate's FSDP 2 by default from 5.10.0 (training_args.py
// fsdp_config.get("version", 2); 1 through 5.9.0) and, under FSDP 1, wraps LoRA adapters apart
// (integrations/fsdp.py update_fsdp_plugin_peft); torchtune shards with FSDP 2 (training/_distributed.py
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
constexpr LogitsPath kLitgptFull{{1, 1, 1, 0}, {0, 0, 4, 0}, {0, 0, 1, 0}};
constexpr LogitsPath kLitgptChunked{{1, 1, 1, 0}, {0, 0, 3, 0}, {0, 0, 1, 0}};
constexpr LogitsPath kLitgptChunkedHead{{1, 1, 1, 0}, {0, 0, 2, 2}, {0, 0, 1, 0}};
// Logits paths, per token x vocabulary element at the end of forward, at log-softmax's backward, in the step.
constexpr LogitsPath kHfFull{{1, 1, 1, 0}, {0, 0, 3, 0}, {}};
constexpr LogitsPath kChunked{{1, 0, 1, 1}, {0, 0, 1, 2}, {}};
// torchtune's model upcasts the whole output itself when the loss is not chunked (no 16-bit copy stays).
constexpr LogitsPath kTorchtuneFull{{0, 0, 2, 0}, {0, 0, 3, 0}, {}};

// FSDP gradient accumulation: transformers' Trainer enters accelerate's no_sync for every micro-batch but the last
// (trainer.py _inner_training_loop), LitGPT's scripts Fabric's no_backward_sync (finetune/full.py); torchtune's
// distributed recipes (recipes/*_distributed.py @v0.1.1 to v0.6.1), torchtitan's train_step (train.py @0.2.2) and
// Composer (dist_strategy.py ddp_sync_context: no_sync for DDP only) call backward on each micro-batch as is.
constexpr FsdpAccumulation kNoSync = FsdpAccumulation::unsharded, kReduceEach = FsdpAccumulation::sharded;

const std::vector<FrameworkProfile> kProfiles = {
    {Framework::hf, "hf", "0", "", "transformers 5.18 + PEFT 0.21, FSDP 1 by default (transformers to 5.9)", "bf16-mixed", "", AdapterDtype::fp32, Loss::full, 8, false, false, 1,
     FsdpWrap::adapters_apart, false, FsdpLayout::root_kept, kNoSync, true, false, kHfFull, kChunked, kChunked, ModelLoading::transformers},
    {Framework::hf, "hf", "5.10", "2026-06-03", "transformers 5.18 + PEFT 0.21", "bf16-mixed", "", AdapterDtype::fp32, Loss::full, 8, false, false, 2,
     FsdpWrap::adapters_apart, false, FsdpLayout::root_kept, kNoSync, true, false, kHfFull, kChunked, kChunked, ModelLoading::transformers},
    // torchtune before 0.3 (recipes/*_distributed.py @v0.2.1): FSDP 1 with LoRA adapters wrapped apart
    // (utils.lora_fsdp_wrap_policy), torch.nn.CrossEntropyLoss over the whole upcast output; before 0.5
    // (modules/rms_norm.py @v0.4.0) RMSNorm casts back before its scale.
    {Framework::torchtune, "torchtune", "0.1.0", "2024-04-15", "torchtune 0.1.0-0.1.1", "bf16-true", "torchtune-0.1", AdapterDtype::base, Loss::full, 8, false, true, 1,
     FsdpWrap::adapters_apart, false, FsdpLayout::root_kept, kReduceEach, false, false, kTorchtuneFull, kChunked, kChunked, ModelLoading::torchtune_nf4_whole},
    // torchtune 0.1 pinned torchao 0.1, whose to_nf4 searched the nearest code over a whole weight at once; 0.2 pinned
    // torchao 0.3.1, which searches in chunks (pyproject.toml at v0.1.1, v0.2.0; torchao 6081796).
    {Framework::torchtune, "torchtune", "0.2.0", "2024-07-16", "torchtune 0.2.0-0.2.1", "bf16-true", "torchtune-0.1", AdapterDtype::base, Loss::full, 8, false, true, 1,
     FsdpWrap::adapters_apart, false, FsdpLayout::root_kept, kReduceEach, false, false, kTorchtuneFull, kChunked, kChunked, ModelLoading::torchtune_nf4},
    {Framework::torchtune, "torchtune", "0.3.0", "2024-09-17", "torchtune 0.3.0-0.4.0", "bf16-true", "torchtune-0.1", AdapterDtype::base, Loss::chunked, 8, false, true, 2,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kReduceEach, false, false, kTorchtuneFull, kChunked, kChunked, ModelLoading::torchtune_nf4},
    {Framework::torchtune, "torchtune", "0.5.0", "2024-12-20", "torchtune 0.6.1", "bf16-true", "torchtune", AdapterDtype::base, Loss::chunked, 8, false, true, 2,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kReduceEach, false, false, kTorchtuneFull, kChunked, kChunked, ModelLoading::torchtune_nf4},
    // torchtitan (train.py, models/llama3): FSDP 2 with bf16 parameters and fp32 reduction, the output upcast
    // for cross_entropy as transformers does (the step deletes the 16-bit output before backward). Its own
    // RMSNorm cast back before the weight until #985 (2025-03-19, nn.RMSNorm after); k and v were repeated to
    // every head before SDPA until #2259 (2026-01-27, enable_gqa after; first released in 0.2.2); from 0.2.0 the
    // embedding and [norm, output] are FSDP units of their own.
    {Framework::torchtitan, "torchtitan", "0", "", "torchtitan 9dec370 (2024-12-26)", "bf16-mixed", "torchtitan-2024", AdapterDtype::base, Loss::full, 8, false, false, 2,
     FsdpWrap::layers, true, FsdpLayout::root_kept, kReduceEach, false, false, kHfFull, kChunked, kChunked, ModelLoading::in_place},
    {Framework::torchtitan, "torchtitan", "0.1.0", "2025-03-19", "torchtitan 0.1.0", "bf16-mixed", "torchtitan-0.1", AdapterDtype::base, Loss::full, 8, false, false, 2,
     FsdpWrap::layers, true, FsdpLayout::root_kept, kReduceEach, false, false, kHfFull, kChunked, kChunked, ModelLoading::in_place},
    {Framework::torchtitan, "torchtitan", "0.2.0", "2025-10-17", "torchtitan 0.2.0-0.2.1", "bf16-mixed", "torchtitan-0.1", AdapterDtype::base, Loss::full, 8, false, false, 2,
     FsdpWrap::layers, true, FsdpLayout::head_unit_kept, kReduceEach, false, false, kHfFull, kChunked, kChunked, ModelLoading::in_place},
    {Framework::torchtitan, "torchtitan", "0.2.2", "2026-01-27", "torchtitan 0.2.2", "bf16-mixed", "torchtitan", AdapterDtype::base, Loss::full, 8, false, false, 2,
     FsdpWrap::layers, true, FsdpLayout::head_unit_kept, kReduceEach, false, false, kHfFull, kChunked, kChunked, ModelLoading::in_place},
    // lit-gpt before 2023-10-24 (lit_gpt/rmsnorm.py before #606) normalised in the input's dtype; from then
    // to 2024-03-07 (#1043, first in 0.3.1) in fp32 with the weight; to 0.4.6 (#1545) cast back first. From
    // #184 (2023-06-21) to the data refactor #950 (2024-02-29) finetune/*.py put the longest sample first.
    {Framework::litgpt, "litgpt", "0", "", "lit-gpt before #184", "bf16-mixed", "litgpt-2023", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, false, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    {Framework::litgpt, "litgpt", "0", "2023-06-21", "lit-gpt #184 to #606", "bf16-mixed", "litgpt-2023", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, true, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    {Framework::litgpt, "litgpt", "0", "2023-10-24", "lit-gpt #606 to #950", "bf16-mixed", "litgpt", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, true, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    {Framework::litgpt, "litgpt", "0", "2024-02-29", "lit-gpt #950 to #1043", "bf16-mixed", "litgpt", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, false, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    {Framework::litgpt, "litgpt", "0.3.1", "2024-03-07", "LitGPT 0.3.1-0.4.5", "bf16-mixed", "litgpt-0.3", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, false, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    {Framework::litgpt, "litgpt", "0.4.6", "2024-07-23", "LitGPT 0.5.13", "bf16-mixed", "litgpt", AdapterDtype::base, Loss::chunked, 0, true, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kNoSync, false, false, kLitgptFull, kLitgptChunked, kLitgptChunkedHead, ModelLoading::in_place},
    // llm-foundry on Composer (llm-foundry v0.21.0, Composer v0.31.0): FSDP 1 units per decoder block
    // (MPTModel.fsdp_wrap_fn, hf_fsdp.py for Hugging Face models), amp_bf16, the model returning logits to Composer's
    // loss, fused_crossentropy (flash-attn's kernel) as MPT's default loss_fn, PEFT adapters for LoRA, QLoRA
    // through transformers' from_pretrained. One revision, also for earlier releases (the 2023 benchmark tables).
    {Framework::llm_foundry, "llm-foundry", "0.21.0", "", "llm-foundry 0.21.0 + Composer 0.31.0", "bf16-mixed", "", AdapterDtype::fp32, Loss::fused, 8, false, false, 1,
     FsdpWrap::layers, false, FsdpLayout::root_kept, kReduceEach, false, false, kHfFull, kChunked, kChunked, ModelLoading::transformers},
};

}  // namespace

const std::vector<FrameworkProfile>& framework_profiles() { return kProfiles; }

const FrameworkProfile& framework_profile(Framework f) {
    const FrameworkProfile* current = &kProfiles[0];
    for (const FrameworkProfile& p : kProfiles)
        if (p.id == f) current = &p;
    return *current;
}

const FrameworkProfile* find_framework(const std::string& name) {
    for (const FrameworkProfile& p : kProfiles)
        if (name == p.name) return &framework_profile(p.id);
    return nullptr;
}

namespace {

// "1.2.3" as numbers (up to 4 parts, any suffix after them ignored: "0.3.0rc1", "2.6.0+cu124"); empty if it
// does not start with one.
std::vector<unsigned long> release_parts(const std::string& v) {
    std::vector<unsigned long> parts;
    std::size_t i = 0;
    while (i < v.size() && parts.size() < 4 && std::isdigit(static_cast<unsigned char>(v[i]))) {
        unsigned long n = 0;
        std::size_t digits = 0;
        for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && digits < 9; ++i, ++digits) n = n * 10 + (v[i] - '0');
        parts.push_back(n);
        if (i < v.size() && v[i] == '.') ++i; else break;
    }
    return parts;
}

bool is_date(const std::string& v) {
    if (v.size() != 10 || v[4] != '-' || v[7] != '-') return false;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
    return true;
}

}  // namespace

bool is_release(const std::string& version) { return !release_parts(version).empty(); }

int compare_releases(const std::string& a, const std::string& b) {
    const std::vector<unsigned long> x = release_parts(a), y = release_parts(b);
    return x < y ? -1 : y < x ? 1 : 0;
}

const FrameworkProfile* framework_revision(const FrameworkProfile& current, const std::string& version) {
    const bool date = is_date(version);
    const std::vector<unsigned long> release = release_parts(version);
    if (!date && release.empty()) return nullptr;
    const FrameworkProfile* chosen = nullptr;
    for (const FrameworkProfile& p : kProfiles) {
        if (p.id != current.id) continue;
        const bool in_force = date ? std::string(p.since_date) <= version : release_parts(p.since_release) <= release;
        if (!chosen || in_force) chosen = &p;
    }
    return chosen;
}

}  // namespace vramcalc
