#include "exports/trl_exports.hpp"

#include "exports/export_text.hpp"

namespace vramcalc {

namespace {

// TRL's config classes (TrainingArguments subclasses) of the trainers training_methods.cpp models: TRL 1.16, PPO's
// from TRL 1.12 (checked against tests/data/exports/schema.json).
struct TrlConfigClass {
    TrainingMethod method;
    const char *module, *name, *loss;  // loss: the arguments that pick the method's loss
};
const TrlConfigClass kTrlConfigs[] = {
    {TrainingMethod::dpo, "trl", "DPOConfig", ""},
    {TrainingMethod::ipo, "trl", "DPOConfig", "loss_type=[\"ipo\"]"},
    {TrainingMethod::kto, "trl", "KTOConfig", ""},
    {TrainingMethod::orpo, "trl.experimental.orpo", "ORPOConfig", ""},
    {TrainingMethod::simpo, "trl.experimental.cpo", "CPOConfig", "loss_type=\"simpo\", cpo_alpha=0.0"},
    {TrainingMethod::grpo, "trl", "GRPOConfig", ""},
    {TrainingMethod::rloo, "trl", "RLOOConfig", ""},
    {TrainingMethod::distill, "trl", "DistillationConfig", ""},
    {TrainingMethod::ppo, "trl.experimental.ppo", "PPOConfig", ""},
};

// The method's own arguments: lengths, the reference, generation and its engine, the teacher, PPO's rollout.
std::vector<std::string> trl_method_args(const Config& c, const TrlConfigClass& t) {
    std::vector<std::string> a;
    if (*t.loss) a.push_back(t.loss);
    const std::string total = n(c.prompt_len + c.completion_len), completion = n(c.completion_len);
    switch (c.method) {
        case TrainingMethod::dpo:
        case TrainingMethod::ipo:
        case TrainingMethod::kto:
            a.push_back("max_length=" + total);
            if (c.reference == Reference::precomputed) a.push_back("precompute_ref_log_probs=True");
            break;
        case TrainingMethod::orpo:
        case TrainingMethod::simpo: a.push_back("max_length=" + total), a.push_back("max_completion_length=" + completion); break;
        case TrainingMethod::grpo:
        case TrainingMethod::rloo:
            a.push_back("max_completion_length=" + completion);
            a.push_back("num_generations=" + n(c.num_generations));
            a.push_back("steps_per_generation=" + n(c.steps_per_generation));
            a.push_back("num_iterations=" + n(c.num_iterations));
            // A non-zero beta loads the reference (GRPO's default 0.0, RLOO's 0.05).
            if (c.method == TrainingMethod::grpo && c.reference != Reference::none) a.push_back("beta=0.04");
            if (c.method == TrainingMethod::rloo && c.reference == Reference::none) a.push_back("beta=0.0");
            if (c.inference_engine != InferenceEngine::none) {
                a.push_back("use_vllm=True");
                a.push_back(std::string("vllm_mode=") + (c.inference_engine == InferenceEngine::vllm_server ? "\"server\"" : "\"colocate\""));
                if (c.inference_engine == InferenceEngine::vllm_colocate) {
                    a.push_back("vllm_gpu_memory_utilization=" + num(c.inference_gpu_share));
                    if (c.inference_sleep_mode) a.push_back("vllm_enable_sleep_mode=True");
                }
            }
            break;
        case TrainingMethod::distill: {
            const char* dtype = c.teacher_dtype == Dtype::fp32 ? "float32" : c.teacher_dtype == Dtype::fp16 ? "float16" : "bfloat16";
            a.push_back("max_completion_length=" + completion);
            a.push_back("teacher_model_name_or_path=" + str(model_id(c.teacher).empty() ? "path/to/teacher" : model_id(c.teacher)));
            a.push_back(std::string("teacher_model_init_kwargs={\"dtype\": \"") + dtype + "\"}");
            a.push_back(std::string("beta=") + (c.divergence == Divergence::reverse_kl ? "1.0" : c.divergence == Divergence::forward_kl ? "0.0" : "0.5"));
            break;
        }
        case TrainingMethod::ppo:
            a.push_back("response_length=" + completion);
            a.push_back("num_mini_batches=" + n(c.num_mini_batches));
            a.push_back("local_rollout_forward_batch_size=" + n(c.rollout_forward_batch));
            break;
        case TrainingMethod::sft: break;
    }
    return a;
}

}  // namespace

std::optional<TrlConfigExport> trl_config_export(const Config& c) {
    for (const TrlConfigClass& t : kTrlConfigs)
        if (t.method == c.method) return TrlConfigExport{t.module, t.name, trl_method_args(c, t)};
    return std::nullopt;
}

}  // namespace vramcalc
