// Training stacks as profiles: each sets the defaults of named lower-level knobs from its own code
// (frameworks.cpp); a key the user sets overrides the profile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vramcalc {

enum class Framework { hf, litgpt, torchtune, torchtitan, llm_foundry };
// How the loss meets the logits: all at once (transformers' ForCausalLMLoss and plain cross-entropy), in
// chunks (torchtune's CEWithChunkedOutputLoss, LitGPT's chunked_cross_entropy), by an in-place kernel over the
// 16-bit logits (flash-attn's and Liger's cross-entropy), or fused with lm_head so the logits never exist whole
// (Liger's fused linear cross-entropy, Cut Cross-Entropy).
enum class Loss { full, chunked, fused, fused_linear };
// LoRA adapters in fp32 (PEFT's autocast_adapter_dtype) or in the base weights' dtype (LitGPT, torchtune).
enum class AdapterDtype { fp32, base };
// How FSDP units are formed under LoRA: adapters in units of their own (PEFT's fsdp_auto_wrap_policy, which
// transformers' Trainer installs), or one unit per decoder layer mixing frozen and trainable weights.
enum class FsdpWrap { adapters_apart, layers };
// What stays unsharded at the end of forward besides the layers' units: the root unit holding the embedding,
// final norm and lm_head, with the last layer kept for backward (FSDP 1, accelerate, torchtitan before 0.2),
// or only a [norm, output] unit, the embedding being a unit of its own (torchtitan 0.2).
enum class FsdpLayout { root_kept, head_unit_kept };
// How FSDP accumulates gradients over micro-batches: every unit keeps its unsharded gradient until the last
// micro-batch (FSDP 1's no_sync, FSDP 2's set_requires_gradient_sync(False)), or each micro-batch's backward
// reduce-scatters into the sharded gradients, which then carry over (a loop of plain backward calls).
enum class FsdpAccumulation { unsharded, sharded };
// How a stack puts a QLoRA model on the GPU (memory/model_loading.cpp replays the last three): each weight allocated
// once in its final place; transformers 5.x from_pretrained with a bitsandbytes 4-bit config; torchtune's build on
// the GPU in bf16 with each linear quantized by torchao's to_nf4 (its nearest-code search in chunks, or, torchao 0.1,
// over the whole weight at once).
enum class ModelLoading { in_place, transformers, torchtune_nf4, torchtune_nf4_whole };

// Logits-sized tensors alive at one moment, per token x vocabulary element: `half` in the model's compute
// dtype, `upcast` fp32 copies of them (no copy in fp32 training), `fp32` fp32 tensors, `per_chunk` fp32
// tensors of one loss chunk (divided by the chunk count).
struct LogitsMoment {
    double half = 0, upcast = 0, fp32 = 0, per_chunk = 0;
};
// The logits path of one stack and loss: at the end of forward (loss computed), at the first
// log-softmax backward, and during the optimizer step.
struct LogitsPath {
    LogitsMoment forward, backward, step;
};

// One revision of a stack: the defaults its code gave from `since_release` (first published on `since_date`)
// until the next revision of the same stack. framework_version picks one by release or by date; code from
// before the stack's releases (lit-gpt in 2023) is release "0", reached by date.
struct FrameworkProfile {
    Framework id;
    const char* name;          // the JSON value
    const char* since_release;
    const char* since_date;    // YYYY-MM-DD
    const char* code;          // the code the defaults were read from
    const char* precision;     // the default JSON precision
    const char* modules;       // families.cpp row of the stack's own model code ("": the model's own)
    AdapterDtype adapter_dtype;
    Loss loss;                 // the default loss, with loss_chunks chunks
    std::uint64_t loss_chunks;
    bool lm_head_chunks_for_lora;  // the LoRA script runs lm_head per chunk (LitGPT's lora.py)
    // The chunked output projection (torchtune's TransformerDecoder.chunked_output) saves a contiguous copy of
    // each chunk's input, and backward sums the chunks' weight gradients (three V x h tensors at once).
    bool chunked_output_projection;
    int fsdp_version;          // the FSDP API the stack uses
    FsdpWrap fsdp_wrap;
    // FSDP mixed precision reduces gradients in fp32 (torchtitan's MixedPrecisionPolicy), not in the 16-bit
    // compute dtype (accelerate's): FSDP 2 then accumulates unsharded gradients in fp32.
    bool fsdp_reduce_fp32;
    FsdpLayout fsdp_layout;
    FsdpAccumulation fsdp_accumulation;
    // The loss is computed inside the FSDP-wrapped model (transformers' labels path): FSDP's pre-backward hook on
    // its output prefetches the last layer before the loss's backward. Elsewhere the model returns the logits.
    bool loss_in_model;
    // The loop runs the dataset's longest sample in its first micro-batch (lit-gpt's finetune scripts, "so potential
    // OOMs happen right away"): seq_len is then that micro-batch's length, and later ones are shorter.
    bool longest_batch_first;
    LogitsPath full, chunked, chunked_lm_head;
    ModelLoading loading;  // how it puts a QLoRA model on the GPU (memory/model_loading.hpp)
};

const std::vector<FrameworkProfile>& framework_profiles();  // every revision, oldest first per stack
const FrameworkProfile& framework_profile(Framework);      // its current revision
const FrameworkProfile* find_framework(const std::string& name);  // the current revision, nullptr if unknown
// The revision of `current`'s stack in force at `version`, a release ("0.2.1") or a date ("2024-05-20"):
// nullptr when the version is malformed; the oldest revision for anything older.
const FrameworkProfile* framework_revision(const FrameworkProfile& current, const std::string& version);
// Release strings: "0.41.1", "0.3.0rc1", "2.6.0+cu124" (up to four numbers, then anything).
bool is_release(const std::string& version);
int compare_releases(const std::string& a, const std::string& b);  // <0, 0, >0 on their numbers

}  // namespace vramcalc
