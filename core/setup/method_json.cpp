#include "setup/method_json.hpp"

#include "setup/training_methods.hpp"

namespace vramcalc {

namespace {

const Names<TrainingMethod, 10> kTraining{{{TrainingMethod::sft, "sft"},
                                          {TrainingMethod::dpo, "dpo"},
                                          {TrainingMethod::ipo, "ipo"},
                                          {TrainingMethod::kto, "kto"},
                                          {TrainingMethod::orpo, "orpo"},
                                          {TrainingMethod::simpo, "simpo"},
                                          {TrainingMethod::grpo, "grpo"},
                                          {TrainingMethod::rloo, "rloo"},
                                          {TrainingMethod::distill, "distill"},
                                          {TrainingMethod::ppo, "ppo"}}};
const Names<Reference, 4> kReference{{{Reference::none, "none"},
                                      {Reference::model, "model"},
                                      {Reference::base_without_adapters, "base-without-adapters"},
                                      {Reference::precomputed, "precomputed"}}};
const Names<Divergence, 3> kDivergence{
    {{Divergence::reverse_kl, "reverse-kl"}, {Divergence::forward_kl, "forward-kl"}, {Divergence::jsd, "jsd"}}};
const Names<Dtype, 3> kDtype{{{Dtype::bf16, "bf16"}, {Dtype::fp16, "fp16"}, {Dtype::fp32, "fp32"}}};

void read_inference_engine(Reader& r, Config& c, std::vector<FieldError>& errors) {
    const json* ie = r.find("inference_engine");
    if (!ie) return;
    if (ie->is_string() && ie->get<std::string>() == "none") {
        c.inference_engine = InferenceEngine::none;
    } else if (ie->is_object()) {
        Reader er(*ie, "inference_engine.", errors);
        const json* name = er.find("name");
        if (!name || !name->is_string() || name->get<std::string>() != "vllm") er.fail("name", "must be \"vllm\"");
        c.inference_engine = InferenceEngine::vllm_colocate;
        if (const json* mode = er.find("mode")) {
            if (*mode == "server") c.inference_engine = InferenceEngine::vllm_server;
            else if (*mode != "colocate")
                er.fail("mode", "must be \"colocate\" (on the training GPUs) or \"server\" (other GPUs), got " + show(*mode));
        }
        if (c.inference_engine == InferenceEngine::vllm_colocate) {
            c.inference_gpu_share = 0.3;  // TRL's vllm_gpu_memory_utilization default
            er.number("gpu_memory_utilization", c.inference_gpu_share, 0.01, 0.95, false);
            er.boolean("sleep_mode", c.inference_sleep_mode);
        } else {
            for (const char* key : {"gpu_memory_utilization", "sleep_mode"})
                if (er.has(key)) er.fail(key, "is the colocated engine's; a vLLM server runs on other GPUs");
        }
        er.reject_unknown("name, mode, gpu_memory_utilization, sleep_mode");
    } else {
        r.fail("inference_engine", "must be \"none\" or {\"name\": \"vllm\", \"mode\": \"colocate\", \"gpu_memory_utilization\": 0.3}, got " + show(*ie));
    }
}

// PPO's rollout and its two extra models (TRL 1.12's PPOConfig: local_rollout_forward_batch_size 64,
// num_mini_batches 1). The value and reward models default to the policy's architecture, as in TRL's example script.
void read_ppo_models(Reader& r, Config& c, std::vector<FieldError>& errors) {
    r.integer("rollout_forward_batch", c.rollout_forward_batch, 1, kMaxBatch);
    r.integer("num_mini_batches", c.num_mini_batches, 1, kMaxBatch);
    c.value_model = c.reward_model = c.model;
    if (const json* m = r.find("value_model")) read_model(m, c.value_model, "value_model", c.notes, errors);
    if (const json* m = r.find("reward_model")) read_model(m, c.reward_model, "reward_model", c.notes, errors);
    Dtype reward = Dtype::bf16;
    if (r.has("reward_dtype")) r.choice("reward_dtype", reward, kDtype), c.reward_dtype = reward;
    for (const char* key : {"rollout_forward_batch", "num_mini_batches", "value_model", "reward_model", "reward_dtype"})
        if (c.method != TrainingMethod::ppo && r.has(key)) r.fail(key, "goes with \"method\": \"ppo\"");
}

}  // namespace

const char* to_string(TrainingMethod e) { return kTraining.name(e); }
const char* to_string(Reference e) { return kReference.name(e); }
const char* to_string(Divergence e) { return kDivergence.name(e); }

void read_training_method(Reader& r, Config& c, std::vector<FieldError>& errors, bool seq_len_given) {
    r.choice("method", c.method, kTraining);
    const MethodTraits& m = method_traits(c.method);
    // TRL's defaults: a second model for a full fine-tune, the policy with its adapters off for a PEFT one (DPO,
    // KTO, RLOO's beta 0.05, PPO); GRPO's beta 0 and the reference-free methods take none.
    if (m.reference_by_default)
        c.reference = c.finetune.method == FinetuneMethod::full ? Reference::model : Reference::base_without_adapters;
    r.choice("reference", c.reference, kReference);
    // TRL's configs default gradient_checkpointing to True (trl/trainer/base_config.py _BaseConfig); TRL 1.12's
    // PPOTrainer never applies it.
    if (is_trl(c) && c.method != TrainingMethod::ppo && !r.has("checkpointing")) c.checkpointing = Checkpointing::full;
    r.integer("prompt_len", c.prompt_len, 1, kMaxTokens);
    r.integer("completion_len", c.completion_len, 1, kMaxTokens);
    if (c.method == TrainingMethod::rloo) c.num_generations = 2;  // RLOOConfig's default
    r.integer("num_generations", c.num_generations, 1, kMaxBatch);
    read_inference_engine(r, c, errors);
    // TRL's GRPOConfig and RLOOConfig: steps_per_generation defaults to gradient_accumulation_steps
    // (DistillationTrainer always generates that many micro-batches at once).
    c.steps_per_generation = c.grad_accum;
    r.integer("steps_per_generation", c.steps_per_generation, 1, kMaxBatch);
    r.integer("num_iterations", c.num_iterations, 1, kMaxBatch);
    for (const char* key : {"steps_per_generation", "num_iterations", "num_generations"})
        if (!m.groups && r.has(key)) r.fail(key, "goes with \"method\": \"grpo\" or \"rloo\"");
    if (const json* t = r.find("teacher")) read_model(t, c.teacher, "teacher", c.notes, errors);
    r.choice("teacher_dtype", c.teacher_dtype, kDtype);
    r.choice("divergence", c.divergence, kDivergence);
    for (const char* key : {"teacher", "teacher_dtype", "divergence"})
        if (c.method != TrainingMethod::distill && r.has(key)) r.fail(key, "goes with \"method\": \"distill\"");
    if (c.method == TrainingMethod::distill && !r.has("teacher")) r.fail("teacher", "is required with distill: the teacher model");
    read_ppo_models(r, c, errors);
    if (is_trl(c) && c.prompt_len && c.completion_len) {
        if (c.prompt_len + c.completion_len > kMaxTokens)
            r.fail("completion_len", "prompt_len + completion_len must not exceed " + std::to_string(kMaxTokens));
        else if (seq_len_given && c.seq_len != c.prompt_len + c.completion_len)
            r.fail("seq_len", "is prompt_len + completion_len (" + std::to_string(c.prompt_len + c.completion_len) +
                                  ") under " + to_string(c.method) + "; give those two");
        c.seq_len = c.prompt_len + c.completion_len;
    }
}

void training_method_to_json(const Config& c, json& out) {
    out["method"] = to_string(c.method);
    if (!is_trl(c)) return;
    out["reference"] = to_string(c.reference), out["prompt_len"] = c.prompt_len, out["completion_len"] = c.completion_len;
    if (method_traits(c.method).groups) {
        out["num_generations"] = c.num_generations;
        out["steps_per_generation"] = c.steps_per_generation, out["num_iterations"] = c.num_iterations;
        out["inference_engine"] = c.inference_engine == InferenceEngine::vllm_colocate
                                      ? json{{"name", "vllm"}, {"mode", "colocate"}, {"gpu_memory_utilization", c.inference_gpu_share},
                                             {"sleep_mode", c.inference_sleep_mode}}
                                  : c.inference_engine == InferenceEngine::vllm_server ? json{{"name", "vllm"}, {"mode", "server"}}
                                                                                      : json("none");
    }
    if (c.method == TrainingMethod::ppo) {
        out["rollout_forward_batch"] = c.rollout_forward_batch, out["num_mini_batches"] = c.num_mini_batches;
        out["value_model"] = model_to_json(c.value_model), out["reward_model"] = model_to_json(c.reward_model);
        if (c.reward_dtype) out["reward_dtype"] = kDtype.name(*c.reward_dtype);
    }
    if (c.method == TrainingMethod::distill) {
        out["teacher"] = model_to_json(c.teacher);
        out["teacher_dtype"] = kDtype.name(c.teacher_dtype);
        out["divergence"] = to_string(c.divergence);
    }
}

}  // namespace vramcalc
