// TRL 1.16's DPO and GRPO trainers (trl/trainer/dpo_trainer.py, grpo_trainer.py): the policy runs as a supervised
// step of `rows` sequences, its loss through TRL's fused LM head (trl/kernels/chunked_logprob.py, from TRL 1.15)
// instead of whole logits; a reference forward (and GRPO's generation) adds its own moments. Measured on the CPU
// with the trainers' own train() (tests/validation/stacks/trl, formulas.py there).
#include <algorithm>

#include "memory_common.hpp"
#include "memory_terms.hpp"
#include "phases.hpp"

namespace vramcalc {

using namespace detail;

namespace {

// ChunkedLogProbFunction's tiles: 4096 scored positions by 32768 vocabulary columns, the buffer allocated at full
// width whatever the vocabulary.
constexpr double kTokenChunk = 4096, kVocabChunk = 32768;

// Sequences in one forward: DPO concatenates each pair's chosen and rejected rows; GRPO's micro-batch counts
// completions (prompts x num_generations).
double rows(const Config& c) { return double(c.micro_batch) * (c.method == TrainingMethod::dpo ? 2 : 1); }

// Positions the head scores: on CUDA (Triton) the completion tokens only; elsewhere every position but the last.
double scored(const Config& c) {
    const double s = double(c.prompt_len + c.completion_len);
    return rows(c) * (c.device == Device::cpu ? s - 1 : double(c.completion_len));
}

// The policy as a supervised step of rows x (prompt + completion) tokens.
Config policy_step(const Config& c) {
    Config p = c;
    p.method = TrainingMethod::sft;
    p.micro_batch = std::uint64_t(rows(c));
    p.seq_len = c.prompt_len + c.completion_len;
    return p;
}

struct Head {
    double saved = 0;      // what its forward saves: the scored hidden states and three N-vectors
    double forward = 0;    // its forward's buffers: the tile, seven fp32 N-vectors, the autocast cast, CPU temporaries
    double backward = 0;   // its backward's: the tile again, the fp32 gradient accumulators, casts, CPU temporaries
};

Head fused_head(const Config& c, const Config& policy, bool reference) {
    const Architecture& a = c.model;
    const double n = scored(c), h = double(a.hidden), x = residual_element_bytes(policy), e = compute_element_bytes(policy);
    const double chunk = std::min(n, kTokenChunk), tile_cols = std::min(double(a.vocab), kVocabChunk);
    const bool cast = autocast(policy) && x == 4;  // fp32 hidden states cast to the autocast dtype per chunk
    const bool cpu = c.device == Device::cpu;      // torch ops fold each tile instead of Triton kernels
    Head hd;
    hd.saved = n * h * x + 16 * n;
    const double tile = chunk * kVocabChunk * e;
    // DPO's policy head also returns entropy, mean logits and top-1: its CPU fold keeps a bool mask more.
    const double fold = reference || c.method != TrainingMethod::dpo ? 12 : 13;
    hd.forward = tile + 28 * n + (cast ? chunk * h * 2 : 0) + (cpu ? fold * chunk * tile_cols : 0);
    hd.backward = tile + 4 * n * h + (trains_all_weights(c) ? 4 * double(a.vocab) * h : 0) +
                  (cast ? chunk * h * 2 + tile_cols * h * 2 : 0) + (cpu ? 29 * chunk * tile_cols : 0);
    return hd;
}

// A second model for the reference: the policy's weights again, in the dtype they were loaded in (TRL's
// create_model_from_path uses the policy's dtype: fp32 under bf16-mixed).
double reference_weights_bytes(const Config& c) {
    if (c.reference != Reference::model) return 0;
    return double(total_params(c.model)) * weight_element_bytes(c);
}

// GRPO generates steps_per_generation micro-batches' completions at once (GRPOTrainer._prepare_inputs), and scores
// them per micro-batch.
double generation_rows(const Config& c) { return rows(c) * double(c.steps_per_generation); }

// GRPO's no-grad policy forward for importance sampling (_generate_and_score_completions): when generation and
// optimizer steps are misaligned (gradient_accumulation_steps % (steps_per_generation x num_iterations) != 0), and
// always with vLLM (vllm_importance_sampling_correction defaults to True).
bool scores_old_logps(const Config& c) {
    return c.method == TrainingMethod::grpo &&
           (c.inference_engine != InferenceEngine::none || c.grad_accum % (c.steps_per_generation * c.num_iterations) != 0);
}

// Generation in the training process (GRPO, no vLLM): the larger of the prefill and the KV cache at its longest
// (transformers' DynamicCache, one layer's K or V briefly twice as torch.cat grows it). The cache takes its first
// tensor's dtype: fp32 under autocast over fp32 weights, where RoPE promotes K. Autocast's 16-bit copies of every
// weight but the embedding live through each forward (measured, stacks/trl formulas.py).
double generation_bytes(const Config& c, const Config& policy) {
    const Architecture& a = c.model;
    const double g = generation_rows(c), p = double(c.prompt_len), x = residual_element_bytes(policy);
    const double h = double(a.hidden), ffn = double(a.ffn), v = double(a.vocab);
    const double kv_bytes = autocast(policy) && x == 4 ? 4 : compute_element_bytes(policy);
    auto kv = [&](double tokens) { return double(a.layers) * 2 * g * double(a.kv_heads) * double(head_dim(a)) * tokens * kv_bytes; };
    const bool lora = !trains_all_weights(c);
    const double weight_casts = autocast(policy) && x == 4 ? (double(total_params(a)) - v * h) * 2 : 0;
    double prefill = kv(p) + (lora ? 4 : 3) * g * p * ffn * x + 4 * g * p * h * x + 2 * p * double(head_dim(a)) * 4;
    if (weight_casts > 0) prefill = kv(p) + weight_casts + 2 * g * p * ffn * 2;
    // A 16-bit frozen lm_head: aten::matmul cannot fold the prefill's last-position slice and expands the weight per
    // sequence (measured on the CPU; device independent code, unverified on CUDA).
    if (lora && weight_element_bytes(policy) == 2) prefill = kv(p) + g * v * h * 2;
    const double t = p + double(c.completion_len) - 1;
    const double decode = kv(t) + kv(t) / double(a.layers) + weight_casts;
    return std::max(prefill, decode);
}

}  // namespace

double inference_engine_bytes(const Config& c) {
    return c.inference_engine == InferenceEngine::vllm_colocate ? c.inference_gpu_share * c.gpu.memory_gib * 1024.0 * 1024 * 1024 : 0;
}

std::vector<Phase> preference_phases(const Config& c) {
    const Config policy = policy_step(c);
    const std::vector<Phase> supervised = supervised_phases(policy);
    auto phase = [&](const char* name) { return std::find_if(supervised.begin(), supervised.end(), [&](const Phase& p) { return p.name == name; })->terms; };
    Terms base = resident(policy);
    base.weights += reference_weights_bytes(c);
    const Head policy_head = fused_head(c, policy, false), reference_head = fused_head(c, policy, true);
    const double a = activations_bytes(policy) + policy_head.saved;  // the policy's graph
    const double last_hidden = rows(c) * double(policy.seq_len) * double(c.model.hidden) * residual_element_bytes(policy);
    // Autocast's cache of 16-bit weight copies lives until a forward returns (fp32 weights only).
    const double weight_casts = autocast_weight_copy_bytes(policy);
    std::vector<Phase> out;

    if (c.method == TrainingMethod::grpo && c.inference_engine == InferenceEngine::none) {
        Terms gen = base;
        gen.activations = generation_bytes(c, policy);
        out.push_back({"generation", gen});
    } else if (c.inference_sleep_mode) {
        out.push_back({"generation", base});  // vLLM generates; the training process holds its model states only
    }
    // No-grad forwards scoring log-probs, one micro-batch at a time: GRPO's old log-probs (the policy), then the
    // reference (a model, or the policy with adapters off). DPO scores after the policy's forward, with its graph
    // alive; GRPO before.
    Terms scoring = base;
    scoring.activations = (c.method == TrainingMethod::dpo ? a : 0) + last_hidden + scored(c) * double(c.model.hidden) * residual_element_bytes(policy);
    scoring.logits = reference_head.forward;
    scoring.temporaries += weight_casts;
    if (scores_old_logps(c)) out.push_back({"old_logps", scoring});
    if (c.reference == Reference::model || c.reference == Reference::base_without_adapters) out.push_back({"reference", scoring});
    Terms forward = base;
    forward.gradients = phase("forward").gradients;
    forward.activations = a + last_hidden;
    forward.logits = policy_head.forward;
    forward.temporaries += weight_casts;
    out.push_back({"policy_forward", forward});
    // The head's backward runs first, with everything saved alive; then the layers' as in a supervised step.
    Terms head_backward = forward;
    head_backward.activations = a;
    head_backward.logits = policy_head.backward;
    Terms layers_backward = phase("backward");
    layers_backward.weights += reference_weights_bytes(c);
    layers_backward.logits = 0;
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    Terms step = phase("optimizer_step");
    step.weights += reference_weights_bytes(c);
    step.logits = 0;
    out.push_back({"optimizer_step", step});
    return out;
}

}  // namespace vramcalc
