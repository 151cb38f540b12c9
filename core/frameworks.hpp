// Training stacks as profiles: each sets the defaults of named lower-level knobs from its own code
// (frameworks.cpp); a key the user sets overrides the profile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vramcalc {

enum class Framework { hf, litgpt, torchtune };
// How the loss meets the logits: all at once with an fp32 upcast (transformers' ForCausalLMLoss), in
// chunks (torchtune's CEWithChunkedOutputLoss, LitGPT's lm_head chunks + chunked_cross_entropy), or fused
// with lm_head so the logits never exist whole (Liger, Cut Cross-Entropy).
enum class Loss { full, chunked, fused_linear };
// LoRA adapters in fp32 (PEFT's autocast_adapter_dtype) or in the base weights' dtype (LitGPT, torchtune).
enum class AdapterDtype { fp32, base };

struct FrameworkProfile {
    Framework id;
    const char* name;       // the JSON value
    const char* version;    // the release whose code the defaults follow
    const char* precision;  // a JSON precision value
    Loss loss;
    std::uint64_t loss_chunks;  // 0: one chunk per loss_chunk_tokens positions
    std::uint64_t loss_chunk_tokens;
    AdapterDtype adapter_dtype;
    const char* modules;    // families.cpp row of the framework's own model code ("": the model's own)
    bool logits_carried;    // the training loop keeps the previous step's logits alive (LitGPT)
};

const std::vector<FrameworkProfile>& framework_profiles();
const FrameworkProfile& framework_profile(Framework);
const FrameworkProfile* find_framework(const std::string& name);

}  // namespace vramcalc
