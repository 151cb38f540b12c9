// TRL's trainers (training_methods.hpp): the policy runs as a supervised step of `rows` sequences whose loss
// goes through the trainer's own head instead of the model's; reference, old-log-prob, KL, teacher, value, reward
// and generation passes add their own moments. Each form is measured on the CPU with the trainers' own train()
// (tests/validation/stacks/trl for TRL 1.16, stacks/trl-ppo for TRL 1.12's PPO; formulas.py there).
#include <algorithm>
#include <cmath>

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"
#include "memory/phases.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

using namespace detail;

namespace {

// ChunkedLogProbFunction's and ChunkedDivergenceFunction's tiles: 4096 positions by 32768 vocabulary columns, the
// buffers allocated at full width whatever the vocabulary.
constexpr double kTokenChunk = 4096, kVocabChunk = 32768;

double rows(const Step& c) { return double(c.micro_batch) * method_traits(c.method).rows_per_item; }
double sequence(const Step& c) { return double(c.prompt_len + c.completion_len); }

// Positions the fused log-prob head scores: on CUDA (Triton) the completion tokens only; elsewhere every position
// but the last.
double scored(const Step& c) {
    return rows(c) * (c.device == Device::cpu ? sequence(c) - 1 : double(c.completion_len));
}

// The policy as a supervised step of rows x (prompt + completion) tokens. DistillationTrainer calls the
// backbones through _ForwardRedirection, around accelerate's autocast wrapper: its training passes run in the
// weights' dtype (measured: bf16=True changes only generation).
Config policy_step(const Step& c) {
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
Head fused_logprob_head(const Step& c, const Step& policy, bool reference) {
    const Architecture& a = c.model;
    const double n = scored(c), h = double(a.hidden), x = policy.residual_element, e = policy.compute_element;
    const double chunk = std::min(n, kTokenChunk), tile_cols = std::min(double(a.vocab), kVocabChunk);
    const bool cast = autocast(policy) && x == 4;  // fp32 hidden states cast to the autocast dtype per chunk
    const bool cpu = c.device == Device::cpu;      // torch ops fold each tile instead of Triton kernels
    Head hd;
    hd.saved = n * h * x + 16 * n;
    const double tile = chunk * kVocabChunk * e;
    // DPOTrainer's policy head also returns entropy, mean logits and top-1: its CPU fold keeps a bool mask more.
    const bool top1 = !reference && (c.method == TrainingMethod::dpo || c.method == TrainingMethod::ipo);
    hd.forward = tile + 28 * n + (cast ? chunk * h * 2 : 0) + (cpu ? (top1 ? 13 : 12) * chunk * tile_cols : 0);
    // The CPU backward's fold: 7 fp32 tile-sized tensors and the target mask; a softcapped model (Gemma 2) keeps
    // tanh's output for the chain rule's 1 - t*t, one fp32 more (_backward_tile; measured, stacks/trl *_gemma2).
    const double fold = a.final_softcap > 0 ? 33 : 29;
    hd.backward = tile + 4 * n * h + (trains_all_weights(c) ? 4 * double(a.vocab) * h : 0) +
                  (cast ? chunk * h * 2 + tile_cols * h * 2 : 0) + (cpu ? fold * chunk * tile_cols : 0);
    return hd;
}

// A second model for the reference: the policy's weights again, in the dtype they were loaded in (TRL's
// create_model_from_path uses the policy's dtype: fp32 under bf16-mixed). Under FSDP, trl/models/utils.py
// prepare_fsdp shards it like the policy.
double reference_weights_bytes(const Step& c) {
    if (c.reference != Reference::model) return 0;
    return double(total_params(c.model)) * c.weight_element / (fsdp_units(c) ? c.data_parallel : 1);
}

// GRPO's no-grad policy forward for importance sampling (_generate_and_score_completions): when generation and
// optimizer steps are misaligned (gradient_accumulation_steps % (steps_per_generation x num_iterations) != 0), and
// always with vLLM (vllm_importance_sampling_correction defaults to True). RLOO's always: its KL penalty is in the
// reward (rloo_trainer.py).
bool scores_old_logps(const Step& c) {
    if (c.method == TrainingMethod::rloo) return true;
    return c.method == TrainingMethod::grpo &&
           (c.inference_engine != InferenceEngine::none || c.grad_accum % (c.steps_per_generation * c.num_iterations) != 0);
}

// What FSDP holds unsharded beyond the shards at each moment of a fused-head trainer's step (TRL 1.16's
// prepare_fsdp for the reference, accelerate 1.15's fsdp2_prepare_model / FSDP1 auto-wrap for the policy;
// measured on 2 gloo ranks, tests/validation/stacks/trl-fsdp README sections 1-2), in the unsharded dtype.
struct FsdpUnsharded {
    double reference_kept = 0;  // the reference's units that stay gathered for good
    double generation = 0, generation_prefill = 0, policy_pass = 0, reference = 0, policy_forward = 0, backward = 0;
    // FSDP1 keeps the previous step's gradient shards through zero_grad(set_to_none) until the root's pre-forward;
    // GRPO's generation frees the root unit's share first.
    double gradients_before_generation = 0;
};

FsdpUnsharded fsdp_unsharded(const Step& c, const Step& policy) {
    FsdpUnsharded u;
    if (!fsdp_units(c)) return u;
    const Architecture& a = c.model;
    const double e = policy.compute_element;  // the MixedPrecisionPolicy's param_dtype
    const double adapters = trains_all_weights(c) ? 0 : c.adapter_params / double(a.layers);
    const double layer = (double(layer_params(a)) + adapters) * e;
    const double tail = double(norm_params(a) + lm_head_params(a)) * e;  // [final norm, lm_head]
    const double whole = double(total_params(a)) * e;
    const bool reference_model = c.reference == Reference::model;
    // GRPO and RLOO (generation) and KTO (its KL pass) run the policy before its training forward.
    const bool groups = method_traits(c.method).groups, policy_first = groups || c.method == TrainingMethod::kto;
    if (c.fsdp_version == 1) {
        // FSDP1 never reshards a root unit (embedding, final norm, lm_head) after its forward: the reference's stays
        // gathered for good, the policy's from its forward to the end of backward. GRPO's generation runs under
        // summon_full_params(root, recurse=False) (trl/distributed.py), which frees the root's gradient shard and
        // reshards the root on exit, so its reference pass holds no root unless an old-log-prob pass gathered it.
        const double root_params = double(embedding_params(a) + norm_params(a) + lm_head_params(a)), root = root_params * e;
        u.reference_kept = reference_model ? root : 0;
        u.policy_forward = u.backward = root;
        u.reference = groups && !scores_old_logps(c) ? 0 : root;
        u.generation = u.generation_prefill = root + layer;
        u.policy_pass = root + layer;
        u.gradients_before_generation = gradients_bytes(policy) - root_params * policy.gradient_element / c.data_parallel;
        return u;
    }
    if (c.zero == 2) {
        // reshard_after_forward=False, passed to the reference's single unit too: after its first forward the whole
        // reference stays gathered, and every policy unit from its forward to its backward.
        u.reference_kept = reference_model ? whole : 0;
        u.generation = u.generation_prefill = u.policy_pass = u.reference = u.backward = whole;
        u.policy_forward = whole + tail;  // the tail's flat all-gather buffer, freed by the root's post-forward
        return u;
    }
    // FSDP2 FULL_SHARD: the tail unit (reshard_after_forward=False) stays gathered from the policy's first forward to
    // its backward; a unit's flat all-gather buffer lives until the next unit's copy-out (the last one's, or the
    // tail's, until the root's post-forward); backward prefetches one layer. The reference is ONE unit: its
    // forward holds the flat buffer and the unsharded parameters, 2 x the whole model. With LoRA, PEFT hides the
    // final norm from accelerate: lm_head is a unit alone whose hooks never fire, and TRL's fused head reads it
    // with DTensor.full_tensor() (a copy per forward) until a generation has left it gathered.
    const bool lora_copy = !trains_all_weights(c) && !policy_first;
    // Generation: at a layer's copy-out, the previous layer's flat buffer and this layer's flat buffer and
    // parameters; inside a layer, its own two.
    u.generation = 3 * layer + tail;
    u.generation_prefill = 2 * layer + tail;
    u.policy_pass = tail + layer;
    u.reference = tail + (reference_model ? fsdp2_reference_gather_bytes(c) : layer + (lora_copy ? double(lm_head_params(a)) * e : 0));
    u.policy_forward = tail + (trains_all_weights(c) && !policy_first ? tail : layer);
    u.backward = tail + layer;
    return u;
}

double teacher_weights_bytes(const Step& c) {
    return c.method == TrainingMethod::distill ? double(total_params(c.teacher)) * element_bytes(c.teacher_dtype) : 0;
}

// GRPO generates steps_per_generation micro-batches' completions at once (GRPOTrainer._prepare_inputs), and
// DistillationTrainer grad_accum's; both score them per micro-batch.
double generation_rows(const Step& c) { return rows(c) * double(c.steps_per_generation); }

// transformers' DynamicCache: K and V of every layer for `rows` sequences of `positions` tokens.
double kv_cache_bytes(const Architecture& a, double rows, double positions, double bytes) {
    return double(a.layers) * 2 * rows * double(a.kv_heads) * double(head_dim(a)) * positions * bytes;
}

// Generation in the training process: the larger of the prefill and the KV cache at its longest (transformers'
// DynamicCache, one layer's K or V briefly twice as torch.cat grows it). The cache takes its first tensor's
// dtype: fp32 under autocast over fp32 weights, where RoPE promotes K. Autocast's 16-bit copies of every weight
// but the embedding live through each forward (measured, stacks/trl formulas.py). Under FSDP, what each moment
// holds gathered.
Terms generation_terms(const Step& c, const Step& policy) {
    const Architecture& a = c.model;
    const FsdpUnsharded fsdp = fsdp_unsharded(c, policy);
    const double g = generation_rows(c), p = double(c.prompt_len), x = policy.residual_element;
    const double h = double(a.hidden), ffn = double(a.ffn), v = double(a.vocab);
    const double kv_bytes = autocast(policy) && x == 4 ? 4 : policy.compute_element;
    auto kv = [&](double tokens) { return kv_cache_bytes(a, g, tokens, kv_bytes); };
    const bool lora = !trains_all_weights(c);
    const double weight_casts = autocast(policy) && x == 4 ? (double(total_params(a)) - v * h) * 2 : 0;
    Terms prefill, decode;
    prefill.activations = kv(p) + (lora ? 4 : 3) * g * p * ffn * x + 4 * g * p * h * x + 2 * p * double(head_dim(a)) * 4;
    if (weight_casts > 0) prefill.activations = kv(p) + 2 * g * p * ffn * 2, prefill.temporaries = weight_casts;
    // A 16-bit frozen lm_head: aten::matmul cannot fold the prefill's last-position slice and expands the weight per
    // sequence (measured on the CPU; device independent code, unverified on CUDA).
    if (lora && policy.weight_element == 2) prefill.activations = kv(p) + g * v * h * 2;
    prefill.temporaries += fsdp.generation_prefill;
    const double t = p + double(c.completion_len) - 1;
    decode.activations = kv(t) + kv(t) / double(a.layers);
    decode.temporaries = weight_casts + fsdp.generation;
    // FSDP2 re-gathers every layer per token: the peak is a layer's copy-out, before its cache grows (the
    // step's logits, processed logits and probabilities beside it; stacks/trl-fsdp).
    if (fsdp2(c)) decode.activations = kv(t) + 3 * g * v * 4;
    return prefill.sum() > decode.sum() ? prefill : decode;
}

// The generation moment: in the training process, or (vLLM asleep between generations) the model states alone.
void add_generation(const Step& c, const Step& policy, const Terms& base, std::vector<Phase>& out) {
    if (c.inference_engine == InferenceEngine::none) {
        const Terms moment = generation_terms(c, policy);
        Terms gen = base;
        gen.activations = moment.activations;
        gen.temporaries += moment.temporaries;
        gen.gradients += fsdp_unsharded(c, policy).gradients_before_generation;
        out.push_back({"generation", gen});
    } else if (c.inference_sleep_mode) {
        out.push_back({"generation", base});
    }
}

// DPO, IPO, KTO and GRPO: the fused log-prob head (trl/trainer/{dpo,kto,grpo}_trainer.py).
std::vector<Phase> fused_logprob_phases(const Step& c) {
    const Step policy(policy_step(c));
    const std::vector<Phase> supervised = supervised_phases(policy);
    const FsdpUnsharded fsdp = fsdp_unsharded(c, policy);
    Terms base = resident(policy);
    base.weights += reference_weights_bytes(c) + fsdp.reference_kept;
    const Head policy_head = fused_logprob_head(c, policy, false), scoring_head = fused_logprob_head(c, policy, true);
    // The policy with its adapters off as the reference runs the policy's own forward under null_ref_context
    // (DPOTrainer: concatenated_forward(self.model, ...)), its head's top-1 mask included (measured, stacks/trl
    // dpo_lora_noadapter_*: the reference phase's missing bytes are that mask, 1 byte per tile element).
    const Head& reference_head = c.reference == Reference::base_without_adapters ? policy_head : scoring_head;
    const double a = activations_bytes(policy) + policy_head.saved;  // the policy's graph
    const double x = policy.residual_element;
    const double last_hidden = rows(c) * sequence(c) * double(c.model.hidden) * x;
    // Autocast's cache of 16-bit weight copies lives until a forward returns (fp32 weights only).
    const double weight_casts = autocast_weight_copy_bytes(policy);
    const bool scores_reference = c.reference == Reference::model || c.reference == Reference::base_without_adapters;
    std::vector<Phase> out;

    const bool groups = method_traits(c.method).groups;
    if (groups) add_generation(c, policy, base, out);
    // A no-grad forward through the head: the backbone's last hidden state, the head's input and its buffers.
    Terms scoring = base;
    scoring.activations = last_hidden + scored(c) * double(c.model.hidden) * x;
    scoring.logits = scoring_head.forward;
    scoring.temporaries += weight_casts;
    // Before the policy's forward, with no graph alive: KTO's KL completions through the policy
    // (KTOTrainer._compute_loss), GRPO's and RLOO's old log-probs and reference.
    Terms policy_pass = scoring;
    policy_pass.temporaries += fsdp.policy_pass;
    if (c.method == TrainingMethod::kto) out.push_back({"kl_policy", policy_pass});
    if (scores_old_logps(c)) out.push_back({"old_logps", policy_pass});
    if (groups && scores_reference) {
        Terms reference = scoring;
        reference.logits = reference_head.forward;
        reference.temporaries += fsdp.reference;
        reference.gradients += scores_old_logps(c) ? 0 : fsdp.gradients_before_generation;
        out.push_back({"reference", reference});
    }
    Terms forward = base;
    forward.gradients = phase(supervised, "forward").gradients;
    forward.activations = a + last_hidden;
    forward.logits = policy_head.forward;
    forward.temporaries += weight_casts + fsdp.policy_forward;
    out.push_back({"policy_forward", forward});
    // DPO and KTO score the reference after the policy's forward, its graph alive (KTO the KL completions first).
    if (!groups && scores_reference) {
        Terms reference = scoring;
        reference.activations += a;
        reference.logits = reference_head.forward;
        reference.temporaries += fsdp.reference;
        if (c.method == TrainingMethod::kto) out.push_back({"reference_kl", reference});
        out.push_back({"reference", reference});
    }
    // The head's backward runs first, with everything saved alive; then the layers' as in a supervised step.
    Terms head_backward = forward;
    head_backward.activations = a;
    head_backward.logits = policy_head.backward;
    head_backward.temporaries += fsdp.backward - fsdp.policy_forward;
    Terms layers_backward = without_logits(phase(supervised, "backward"));
    layers_backward.weights += reference_weights_bytes(c) + fsdp.reference_kept;
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    Terms step = without_logits(phase(supervised, "optimizer_step"));
    step.weights += reference_weights_bytes(c) + fsdp.reference_kept;
    out.push_back({"optimizer_step", step});
    return out;
}

// ORPO and SimPO (trl/experimental/orpo, cpo): one concatenated forward whose logits the model builds whole and
// accelerate's convert_outputs_to_fp32 makes fp32; selective_log_softmax per row; ORPO adds the chosen rows'
// cross-entropy (nll). On the CPU the log-softmax backward's per-row gradients are concatenated (2 x M x V fp32);
// on CUDA one gradient buffer (read from the code).
std::vector<Phase> full_logits_phases(const Step& c) {
    const Step policy(policy_step(c));
    const std::vector<Phase> supervised = supervised_phases(policy);
    const Terms base = resident(policy);
    const double v = double(c.model.vocab), s = sequence(c), pairs = double(c.micro_batch);
    const double t = rows(c) * s, m = rows(c) * (s - 1), x = policy.residual_element;
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
std::vector<Phase> distillation_phases(const Step& c) {
    const Step student(policy_step(c));
    const std::vector<Phase> supervised = supervised_phases(student);
    Terms base = resident(student);
    base.weights += teacher_weights_bytes(c);
    const Architecture& s = c.model;
    const Architecture& t = c.teacher;
    const double tokens = rows(c) * sequence(c), n = rows(c) * double(c.completion_len);
    const double h = double(s.hidden), ht = double(t.hidden), x = student.residual_element, et = element_bytes(c.teacher_dtype);
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

// ---- PPO: TRL 1.12.0's PPOTrainer (trl/experimental/ppo/ppo_trainer.py), tests/validation/stacks/trl-ppo ----

// One update's rollout: micro_batch x grad_accum x num_mini_batches prompts, generated and scored
// local_rollout_forward_batch_size rows at a time.
struct Rollout {
    double chunk, chunks;
};

Rollout rollout(const Step& c) {
    const double rows = double(c.micro_batch) * double(c.grad_accum) * double(c.num_mini_batches);
    const double chunk = std::min(rows, double(c.rollout_forward_batch));
    return {chunk, std::ceil(rows / chunk)};
}

// The value model: AutoModelForSequenceClassification with one label, always fully trained (even beside a LoRA
// policy), in the policy's precision: PolicyAndValueWrapper puts both in one optimizer and one autocast.
Config value_step(const Step& c) {
    Config v = policy_step(c);
    v.model = c.value_model;
    v.model.score_labels = 1;
    v.finetune = Finetune{};
    v.reference = Reference::none;
    return v;
}

double ppo_frozen_weights_bytes(const Step& c) {
    Architecture reward = c.reward_model;
    reward.score_labels = 1;
    return double(total_params(reward)) * reward_element_bytes(c) + reference_weights_bytes(c);
}

// A no-grad forward with output_hidden_states (the reference, value and reward passes) at the last layer's MLP:
// the hidden-states tuple and the last layer's residual and MLP input (L + 2 x H), its MLP after the gate is freed,
// the rotary tables of the given position ids.
double nograd_layers_bytes(const Architecture& a, double rows, double seq, double bytes) {
    return rows * seq * bytes * (double(a.layers + 2) * double(a.hidden) + (gated(a) ? 3 : 2) * double(a.ffn) + 2 * double(head_dim(a)));
}

std::vector<Phase> ppo_phases(const Step& c) {
    const Step policy(policy_step(c)), value(value_step(c));
    const std::vector<Phase> supervised = supervised_phases(policy);
    const Architecture& a = c.model;
    const Rollout r = rollout(c);
    const double b = double(c.micro_batch), q = double(c.prompt_len), cl = double(c.completion_len), s = sequence(c);
    // KV caches take the weights' dtype: the rollout calls the unwrapped models (no autocast), and over fp32 weights
    // the training forward's cache is fp32 too (RoPE promotes K).
    const double h = double(a.hidden), v = double(a.vocab), w = policy.weight_element, tokens = b * s;
    // Generation's fp32 scores (generate's output_scores, stacked and padded per chunk): `logitss` lives until the
    // next rollout rebinds it, so every phase holds them.
    const double scores = ppo_kept_scores_bytes(c);
    Terms base = resident(policy);
    const Terms critic = resident(value);
    base.weights += critic.weights + ppo_frozen_weights_bytes(c);
    base.optimizer_states += critic.optimizer_states;
    base.master_weights += critic.master_weights;
    // query_responses, and DDP's gradient buckets for the value model (DDP wraps PolicyAndValueWrapper).
    const double buffers = r.chunks * r.chunk * s * 8 + communication_buffer_bytes(value);
    base.logits = scores;
    base.temporaries += buffers;
    std::vector<Phase> out;

    // Generation, per chunk: the stack of the C score tensors while generate's output (its KV cache, its scores)
    // is alive beside the earlier chunks' stacks, then pad() copying them all; or the prefill's last layer (no
    // hidden-states tuple).
    Terms gen = base;
    const double stack = kv_cache_bytes(a, r.chunk, s - 1, w) + (r.chunks + 1) * r.chunk * cl * v * 4 + 2 * r.chunk * s * 8;
    const double pad = 2 * scores;
    const double prefill = kv_cache_bytes(a, r.chunk, q, w) + nograd_layers_bytes(a, r.chunk, q, w) - double(a.layers) * r.chunk * q * h * w;
    gen.activations = std::max({stack, pad, prefill});
    out.push_back({"generation", gen});
    // The reference (a second model, or the policy with its adapters off): a plain forward that builds a KV cache
    // and whole (rows, seq, vocab) logits, then a per-row log-softmax (C x V fp32).
    if (c.reference != Reference::none) {
        Terms ref = base;
        const double layers = nograd_layers_bytes(a, r.chunk, s, w);
        const double head = double(a.layers + 1) * r.chunk * s * h * w + r.chunk * s * v * w + cl * v * 4;
        ref.activations = kv_cache_bytes(a, r.chunk, s, w) + std::max(layers, head);
        out.push_back({"reference", ref});
    }
    // get_reward: the backbone without a cache, then score on the last hidden state ((rows, seq, 1)).
    Terms val = base, reward = base;
    val.activations = nograd_layers_bytes(c.value_model, r.chunk, s, w);
    reward.activations = nograd_layers_bytes(c.reward_model, r.chunk, s, reward_element_bytes(c));
    out.push_back({"value", val});
    out.push_back({"reward", reward});

    // The PPO epochs: PolicyAndValueWrapper runs the critic backbone, then the policy with whole logits, KV caches
    // and hidden states. Logits: fp32 (accelerate's convert_outputs_to_fp32 copy under autocast) saved whole by
    // selective_log_softmax's gather and logsumexp; 16-bit weights' logits stay bound by `output` and the per-row
    // log_softmax outputs of the completion are saved.
    const bool half = w == 2, mixed_precision = autocast(policy);
    const double lv = half ? 2 : 4, x = policy.residual_element;
    const double logits = tokens * v * lv + (half ? b * cl * v * 2 : 0);
    // `output` keeps the policy's KV cache and hidden states; a frozen embedding's output and the final normed
    // state are not saved otherwise (LoRA); under autocast its fp32 cache and normed state beside the 16-bit copies.
    const double bound = (trains_all_weights(c) ? 0 : 2 * tokens * h * x) +
                         (mixed_precision ? kv_cache_bytes(a, b, s, 4) + tokens * h * 4 : 0);
    const double saved = activations_bytes(policy) + activations_bytes(value) + bound;
    // What `output` and `logits` keep after backward, until the mini-batch's del.
    const double leftover_logits = tokens * v * lv, leftover = kv_cache_bytes(a, b, s, w) + double(a.layers + 1) * tokens * h * x;
    const double grads = gradients_bytes(policy) + gradients_bytes(value);
    const bool accumulating = c.grad_accum > 1;
    // Accumulation: the earlier micro-batches' gradients, their entropy softmax and, while the forward runs,
    // their `output`.
    Terms train = base;
    train.gradients = accumulating ? grads : 0;
    train.logits += accumulating ? b * cl * v * lv : 0;
    train.temporaries += autocast_weight_copy_bytes(policy) + autocast_weight_copy_bytes(value);

    Terms forward = train;
    forward.activations = saved + (accumulating ? leftover : 0);
    forward.logits += (accumulating ? leftover_logits : 0) +
                      (mixed_precision ? tokens * v * 2 : logits);  // the lm_head's 16-bit output before its copy
    if (mixed_precision) forward.activations += kv_cache_bytes(a, b, s, 4) + tokens * h * 4;  // the critic's output
    out.push_back({"policy_forward", forward});
    Terms loss = train;
    loss.activations = saved;
    loss.logits += logits + cl * v * 4 + (accumulating ? leftover_logits : 0);  // per-row logsumexp temporary
    out.push_back({"loss", loss});
    // The in-place `logits /= temperature` on the completion slice backs through CopySlices: the whole logits'
    // gradient twice and the slice's twice. Or the layers' backward, the critic's graph still saved.
    Terms head_backward = train;
    head_backward.activations = saved;
    head_backward.logits += logits + 2 * tokens * v * lv + 2 * b * cl * v * lv;
    Terms layers_backward = without_logits(phase(supervised, "backward"));
    layers_backward.weights = base.weights, layers_backward.optimizer_states = base.optimizer_states;
    layers_backward.master_weights = base.master_weights;
    layers_backward.gradients += accumulating ? gradients_bytes(value) : 0;
    layers_backward.activations += activations_bytes(value) + bound;
    layers_backward.logits = train.logits + leftover_logits;
    layers_backward.temporaries += buffers + autocast_weight_copy_bytes(value);
    out.push_back({"backward", head_backward.sum() >= layers_backward.sum() ? head_backward : layers_backward});
    // The step over the policy's trainable weights and the whole value model (foreach: one temporary list for both).
    Terms step = without_logits(phase(supervised, "optimizer_step"));
    step.weights = base.weights, step.optimizer_states = base.optimizer_states, step.master_weights = base.master_weights;
    step.gradients = grads;
    step.activations = leftover;
    step.logits = train.logits + leftover_logits;
    step.temporaries += buffers + (c.optimizer_impl == OptimizerImpl::foreach ? optimizer_step_temporary_bytes(value) : 0);
    out.push_back({"optimizer_step", step});
    // No-grad entropy statistics after zero_grad: softmax over the completion logits and one product.
    Terms entropy = base;
    entropy.gradients = accumulating ? grads : 0;  // the first micro-batch's, not yet zeroed
    entropy.activations = leftover;
    entropy.logits += leftover_logits + 2 * b * cl * v * lv;
    out.push_back({"entropy_stats", entropy});
    return out;
}

}  // namespace

// Generation's fp32 scores (generate's output_scores, stacked and padded per chunk) of the whole rollout.
double ppo_kept_scores_bytes(const Step& c) {
    const Rollout r = rollout(c);
    return r.chunks * r.chunk * double(c.completion_len) * double(c.model.vocab) * 4;
}

// TRL's prepare_fsdp wraps the reference as one FSDP 2 unit: its forward holds the flat all-gather buffer and the
// unsharded parameters, twice the whole model in the MixedPrecisionPolicy's param_dtype (stacks/trl-fsdp).
double fsdp2_reference_gather_bytes(const Step& c) {
    return 2 * double(total_params(c.model)) * compute_element_bytes(policy_step(c));
}

double reward_element_bytes(const Step& c) {
    return c.reward_dtype ? element_bytes(*c.reward_dtype) : c.weight_element;
}

double inference_engine_bytes(const Step& c) {
    return c.inference_engine == InferenceEngine::vllm_colocate ? c.inference_gpu_share * c.gpu.memory_gib * 1024.0 * 1024 * 1024 : 0;
}

std::vector<Phase> trl_phases(const Step& c) {
    switch (method_traits(c.method).head) {
        case TrlHead::full_logits: return full_logits_phases(c);
        case TrlHead::fused_divergence: return distillation_phases(c);
        case TrlHead::policy_and_value: return ppo_phases(c);
        default: return fused_logprob_phases(c);
    }
}

}  // namespace vramcalc
