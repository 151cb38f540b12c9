// TRL 1.16's trainers (training_methods.hpp): the policy runs as a supervised step of `rows` sequences whose loss
// goes through the trainer's own head instead of the model's; reference, old-log-prob, KL, teacher and generation
// passes add their own moments. Each form is measured on the CPU with the trainers' own train()
// (tests/validation/stacks/trl, formulas.py there).
#include <algorithm>

#include "memory_common.hpp"
#include "memory_terms.hpp"
#include "phases.hpp"
#include "training_methods.hpp"

namespace vramcalc {

using namespace detail;

namespace {

// ChunkedLogProbFunction's and ChunkedDivergenceFunction's tiles: 4096 positions by 32768 vocabulary columns, the
// buffers allocated at full width whatever the vocabulary.
constexpr double kTokenChunk = 4096, kVocabChunk = 32768;

double rows(const Config& c) { return double(c.micro_batch) * method_traits(c.method).rows_per_item; }
double sequence(const Config& c) { return double(c.prompt_len + c.completion_len); }

// Positions the fused log-prob head scores: on CUDA (Triton) the completion tokens only; elsewhere every position
// but the last.
double scored(const Config& c) {
    return rows(c) * (c.device == Device::cpu ? sequence(c) - 1 : double(c.completion_len));
}

// The policy as a supervised step of rows x (prompt + completion) tokens. DistillationTrainer calls the
// backbones through _ForwardRedirection, around accelerate's autocast wrapper: its training passes run in the
// weights' dtype (measured: bf16=True changes only generation).
Config policy_step(const Config& c) {
    Config p = c;
    p.method = TrainingMethod::sft;
    p.micro_batch = std::uint64_t(rows(c));
    p.seq_len = c.prompt_len + c.completion_len;
    if (c.method == TrainingMethod::distill) {
        if (c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed) p.precision = Precision::fp32_true;
        if (c.precision == Precision::bf16_base_mixed) p.precision = Precision::bf16_true, p.adapter_dtype = AdapterDtype::fp32;
        if (c.precision == Precision::fp16_base_mixed) p.precision = Precision::fp16_true, p.adapter_dtype = AdapterDtype::fp32;
    }
    return p;
}

Terms without_logits(Terms t) {
    t.logits = 0;
    return t;
}

const Terms& phase(const std::vector<Phase>& phases, const char* name) {
    return std::find_if(phases.begin(), phases.end(), [&](const Phase& p) { return p.name == name; })->terms;
}

struct Head {
    double saved = 0;      // what its forward saves: the scored hidden states and three N-vectors
    double forward = 0;    // its forward's buffers: the tile, seven fp32 N-vectors, the autocast cast, CPU temporaries
    double backward = 0;   // its backward's: the tile again, the fp32 gradient accumulators, casts, CPU temporaries
};

// The fused log-prob head (trl/kernels/chunked_logprob.py ChunkedLogProbFunction).
Head fused_logprob_head(const Config& c, const Config& policy, bool reference) {
    const Architecture& a = c.model;
    const double n = scored(c), h = double(a.hidden), x = residual_element_bytes(policy), e = compute_element_bytes(policy);
    const double chunk = std::min(n, kTokenChunk), tile_cols = std::min(double(a.vocab), kVocabChunk);
    const bool cast = autocast(policy) && x == 4;  // fp32 hidden states cast to the autocast dtype per chunk
    const bool cpu = c.device == Device::cpu;      // torch ops fold each tile instead of Triton kernels
    Head hd;
    hd.saved = n * h * x + 16 * n;
    const double tile = chunk * kVocabChunk * e;
    // DPOTrainer's policy head also returns entropy, mean logits and top-1: its CPU fold keeps a bool mask more.
    const bool top1 = !reference && (c.method == TrainingMethod::dpo || c.method == TrainingMethod::ipo);
    hd.forward = tile + 28 * n + (cast ? chunk * h * 2 : 0) + (cpu ? (top1 ? 13 : 12) * chunk * tile_cols : 0);
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

double teacher_weights_bytes(const Config& c) {
    return c.method == TrainingMethod::distill ? double(total_params(c.teacher)) * element_bytes(c.teacher_dtype) : 0;
}

// GRPO generates steps_per_generation micro-batches' completions at once (GRPOTrainer._prepare_inputs), and
// DistillationTrainer grad_accum's; both score them per micro-batch.
double generation_rows(const Config& c) { return rows(c) * double(c.steps_per_generation); }

// GRPO's no-grad policy forward for importance sampling (_generate_and_score_completions): when generation and
// optimizer steps are misaligned (gradient_accumulation_steps % (steps_per_generation x num_iterations) != 0), and
// always with vLLM (vllm_importance_sampling_correction defaults to True).
bool scores_old_logps(const Config& c) {
    return c.method == TrainingMethod::grpo &&
           (c.inference_engine != InferenceEngine::none || c.grad_accum % (c.steps_per_generation * c.num_iterations) != 0);
}

// Generation in the training process: the larger of the prefill and the KV cache at its longest (transformers'
// DynamicCache, one layer's K or V briefly twice as torch.cat grows it). The cache takes its first tensor's
// dtype: fp32 under autocast over fp32 weights, where RoPE promotes K. Autocast's 16-bit copies of every weight
// but the embedding live through each forward (measured, stacks/trl formulas.py).
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

// The generation moment: in the training process, or (vLLM asleep between generations) the model states alone.
void add_generation(const Config& c, const Config& policy, const Terms& base, std::vector<Phase>& out) {
    if (c.inference_engine == InferenceEngine::none) {
        Terms gen = base;
        gen.activations = generation_bytes(c, policy);
        out.push_back({"generation", gen});
    } else if (c.inference_sleep_mode) {
        out.push_back({"generation", base});
    }
}

// DPO, IPO, KTO and GRPO: the fused log-prob head (trl/trainer/{dpo,kto,grpo}_trainer.py).
std::vector<Phase> fused_logprob_phases(const Config& c) {
    const Config policy = policy_step(c);
    const std::vector<Phase> supervised = supervised_phases(policy);
    Terms base = resident(policy);
    base.weights += reference_weights_bytes(c);
    const Head policy_head = fused_logprob_head(c, policy, false), scoring_head = fused_logprob_head(c, policy, true);
    const double a = activations_bytes(policy) + policy_head.saved;  // the policy's graph
    const double x = residual_element_bytes(policy);
    const double last_hidden = rows(c) * sequence(c) * double(c.model.hidden) * x;
    // Autocast's cache of 16-bit weight copies lives until a forward returns (fp32 weights only).
    const double weight_casts = autocast_weight_copy_bytes(policy);
    const bool scores_reference = c.reference == Reference::model || c.reference == Reference::base_without_adapters;
    std::vector<Phase> out;

    if (c.method == TrainingMethod::grpo) add_generation(c, policy, base, out);
    // A no-grad forward through the head: the backbone's last hidden state, the head's input and its buffers.
    Terms scoring = base;
    scoring.activations = last_hidden + scored(c) * double(c.model.hidden) * x;
    scoring.logits = scoring_head.forward;
    scoring.temporaries += weight_casts;
    // Before the policy's forward, with no graph alive: KTO's KL completions through the policy
    // (KTOTrainer._compute_loss), GRPO's old log-probs and reference.
    if (c.method == TrainingMethod::kto) out.push_back({"kl_policy", scoring});
    if (scores_old_logps(c)) out.push_back({"old_logps", scoring});
    if (c.method == TrainingMethod::grpo && scores_reference) out.push_back({"reference", scoring});
    Terms forward = base;
    forward.gradients = phase(supervised, "forward").gradients;
    forward.activations = a + last_hidden;
    forward.logits = policy_head.forward;
    forward.temporaries += weight_casts;
    out.push_back({"policy_forward", forward});
    // DPO and KTO score the reference after the policy's forward, its graph alive (KTO the KL completions first).
    if (c.method != TrainingMethod::grpo && scores_reference) {
        Terms reference = scoring;
        reference.activations += a;
        if (c.method == TrainingMethod::kto) out.push_back({"reference_kl", reference});
        out.push_back({"reference", reference});
    }
    // The head's backward runs first, with everything saved alive; then the layers' as in a supervised step.
    Terms head_backward = forward;
    head_backward.activations = a;
    head_backward.logits = policy_head.backward;
    Terms layers_backward = without_logits(phase(supervised, "backward"));
    layers_backward.weights += reference_weights_bytes(c);
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    Terms step = without_logits(phase(supervised, "optimizer_step"));
    step.weights += reference_weights_bytes(c);
    out.push_back({"optimizer_step", step});
    return out;
}

// ORPO and SimPO (trl/experimental/orpo, cpo): one concatenated forward whose logits the model builds whole and
// accelerate's convert_outputs_to_fp32 makes fp32; selective_log_softmax per row; ORPO adds the chosen rows'
// cross-entropy (nll). On the CPU the log-softmax backward's per-row gradients are concatenated (2 x M x V fp32);
// on CUDA one gradient buffer (read from the code).
std::vector<Phase> full_logits_phases(const Config& c) {
    const Config policy = policy_step(c);
    const std::vector<Phase> supervised = supervised_phases(policy);
    const Terms base = resident(policy);
    const double v = double(c.model.vocab), s = sequence(c), pairs = double(c.micro_batch);
    const double t = rows(c) * s, m = rows(c) * (s - 1), x = residual_element_bytes(policy);
    const bool nll = c.method == TrainingMethod::orpo;
    const double logits = t * v * 4, a = activations_bytes(policy);
    std::vector<Phase> out;

    Terms forward = base;
    forward.gradients = phase(supervised, "forward").gradients;
    // A frozen lm_head's input is alive, not saved; under autocast the 16-bit logits meet their fp32 copy.
    forward.activations = a + (trains_all_weights(c) ? 0 : t * double(c.model.hidden) * x);
    forward.logits = logits + (autocast(policy) ? t * v * 2 : 0);
    forward.temporaries += autocast_weight_copy_bytes(policy);  // the matmuls save them: alive until backward
    out.push_back({"policy_forward", forward});
    Terms loss = forward;
    loss.activations = a;
    loss.logits = logits + (nll ? 2 * pairs * (s - 1) * v * 4 : (s - 1) * v * 4 + m * 8);
    out.push_back({"loss", loss});
    // What the loss saves: gather indices, logsumexp and masks, and for nll the chosen rows' log-softmax.
    Terms head_backward = loss;
    head_backward.activations = a + 13 * m + (nll ? pairs * (s - 1) * (4 * v + 8) : 0);
    head_backward.logits = logits + (c.device == Device::cpu ? 2 : 1) * m * v * 4;
    const Terms layers_backward = without_logits(phase(supervised, "backward"));
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    out.push_back({"optimizer_step", without_logits(phase(supervised, "optimizer_step"))});
    return out;
}

// DistillationTrainer (trl/trainer/distillation_trainer.py, trl/kernels/chunked_divergence.py): on-policy
// completions from the student, the student's backbone with its graph, the frozen teacher's no-grad backbone, then
// the fused divergence head over both last hidden states (two fp32 n x 32768 tiles, no logits).
std::vector<Phase> distillation_phases(const Config& c) {
    const Config student = policy_step(c);
    const std::vector<Phase> supervised = supervised_phases(student);
    Terms base = resident(student);
    base.weights += teacher_weights_bytes(c);
    const Architecture& s = c.model;
    const Architecture& t = c.teacher;
    const double tokens = rows(c) * sequence(c), n = rows(c) * double(c.completion_len);
    const double h = double(s.hidden), ht = double(t.hidden), x = residual_element_bytes(student), et = element_bytes(c.teacher_dtype);
    const double chunk = std::min(n, kTokenChunk), tile_cols = std::min(double(s.vocab), kVocabChunk);
    const bool cpu = c.device == Device::cpu, jsd = c.divergence == Divergence::jsd;
    const double tiles = 2 * chunk * kVocabChunk * 4;
    // The tiles' fold in torch ops on the CPU (Triton in registers on CUDA): fp32 temporaries per tile element.
    const double fold_forward = cpu ? (jsd ? 28 : 24) * chunk * tile_cols : 0;
    const double fold_backward = cpu ? (jsd ? 40 : 36) * chunk * tile_cols : 0;
    // A 16-bit teacher's hidden chunk and weight tile cast to fp32 (read from the code, not measured).
    const double teacher_casts = et < 4 ? chunk * ht * 4 + tile_cols * ht * 4 : 0;
    const double a = activations_bytes(student), last_hidden = tokens * h * x;
    const double hidden_copies = n * (h * x + ht * et);  // the completion positions of both, reshaped
    std::vector<Phase> out;

    add_generation(c, c, base, out);  // generation runs under the configured precision (autocast included)
    Terms forward = base;
    forward.gradients = phase(supervised, "forward").gradients;
    // LoRA: the embedding's output and the final norm's x·rsqrt, kept for the adapters' backward.
    forward.activations = a + last_hidden + (trains_all_weights(c) ? 0 : 2 * tokens * h * x);
    out.push_back({"policy_forward", forward});
    // The teacher's no-grad forward, at one layer's MLP: its residual stream, norm, attention output and input
    // copies (4 x H_t) and gate, up and act (3 x ffn_t), with the rotary tables.
    Terms teacher = forward;
    teacher.activations = a + last_hidden + 4 * tokens * ht * et + 3 * tokens * double(t.ffn) * et +
                          2 * sequence(c) * double(head_dim(t)) * 4;
    out.push_back({"teacher", teacher});
    Terms loss = forward;
    loss.activations = a + last_hidden + tokens * ht * et + hidden_copies;
    loss.logits = tiles + 9 * n * 4 + fold_forward + teacher_casts;
    out.push_back({"loss", loss});
    Terms head_backward = loss;
    head_backward.activations = a + hidden_copies + 3 * n * 4;
    head_backward.logits = tiles + n * h * 4 + (trains_all_weights(c) ? double(s.vocab) * h * 4 : 0) + fold_backward + teacher_casts;
    Terms layers_backward = without_logits(phase(supervised, "backward"));
    layers_backward.weights += teacher_weights_bytes(c);
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    Terms step = without_logits(phase(supervised, "optimizer_step"));
    step.weights += teacher_weights_bytes(c);
    out.push_back({"optimizer_step", step});
    return out;
}

}  // namespace

double inference_engine_bytes(const Config& c) {
    return c.inference_engine == InferenceEngine::vllm_colocate ? c.inference_gpu_share * c.gpu.memory_gib * 1024.0 * 1024 * 1024 : 0;
}

std::vector<Phase> trl_phases(const Config& c) {
    switch (method_traits(c.method).head) {
        case TrlHead::full_logits: return full_logits_phases(c);
        case TrlHead::fused_divergence: return distillation_phases(c);
        default: return fused_logprob_phases(c);
    }
}

}  // namespace vramcalc
