#include "setup/schema.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "input/json_reader.hpp"
#include "model/activations.hpp"
#include "hardware/gpus.hpp"
#include "model/families.hpp"
#include "model/presets.hpp"
#include "setup/frameworks.hpp"
#include "setup/strategies.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

// Every enumeration's JSON names, declared once.
const Names<Precision, 7> kPrecision{{{Precision::fp32_true, "32-true", "fp32"},
                                      {Precision::bf16_mixed, "bf16-mixed", "bf16 mixed (fp32 master weights)"},
                                      {Precision::fp16_mixed, "16-mixed", "fp16 mixed (fp32 master weights)"},
                                      {Precision::bf16_true, "bf16-true", "bf16 only (no fp32 copy)"},
                                      {Precision::fp16_true, "16-true", "fp16 only (no fp32 copy)"},
                                      {Precision::bf16_base_mixed, "bf16-base-mixed",
                                       "bf16 frozen base + fp32 adapters, autocast (the LoRA recipe)"},
                                      {Precision::fp16_base_mixed, "16-base-mixed",
                                       "fp16 frozen base + fp32 adapters, autocast (the LoRA recipe)"}}};
constexpr const char* kFp8 = "fp8";
constexpr const char* kFp8Label = "FP8 linears over bf16 (torchao float8 or Transformer Engine; H100, H200, B200, Ada, MI300)";
const Names<Optimizer, 8> kOptimizer{{{Optimizer::adamw, "adamw", "AdamW"},
                                      {Optimizer::paged_adamw, "paged-adamw", "Paged AdamW (bitsandbytes)"},
                                      {Optimizer::paged_adamw_8bit, "paged-adamw-8bit", "Paged AdamW 8-bit (bitsandbytes)"},
                                      {Optimizer::adamw_8bit, "adamw-8bit", "AdamW 8-bit (bitsandbytes)"},
                                      {Optimizer::adafactor, "adafactor", "Adafactor"},
                                      {Optimizer::lion, "lion", "Lion"},
                                      {Optimizer::sgd, "sgd", "SGD"},
                                      {Optimizer::sgd_momentum, "sgd-momentum", "SGD with momentum"}}};
const Names<OptimizerImpl, 3> kImpl{{{OptimizerImpl::foreach, "foreach", "foreach (PyTorch default)"},
                                     {OptimizerImpl::fused, "fused", "fused"},
                                     {OptimizerImpl::single_tensor, "single-tensor", "single tensor (for loop)"}}};
const Names<Fp8Recipe, 4> kFp8Recipe{{{Fp8Recipe::torchao_tensorwise, "torchao-tensorwise", "torchao, tensorwise scaling"},
                                      {Fp8Recipe::torchao_rowwise, "torchao-rowwise", "torchao, rowwise scaling"},
                                      {Fp8Recipe::te_delayed, "te-delayed", "Transformer Engine, delayed scaling"},
                                      {Fp8Recipe::te_current, "te-current", "Transformer Engine, current scaling"}}};
const Names<FinetuneMethod, 3> kFinetune{{{FinetuneMethod::full, "full", "Full fine-tune"},
                                          {FinetuneMethod::lora, "lora", "LoRA"},
                                          {FinetuneMethod::qlora, "qlora", "QLoRA (4-bit base weights)"}}};
const Names<Checkpointing, 4> kCheckpointing{{{Checkpointing::none, "none", "None"},
                                              {Checkpointing::selective, "selective", "Selective (attention only)"},
                                              {Checkpointing::selective_op, "selective-op",
                                               "Selective per op (torchtitan: every other matmul kept)"},
                                              {Checkpointing::full, "full", "Full (every layer)"}}};
const Names<PipelineSchedule, 3> kSchedule{{{PipelineSchedule::one_f_one_b, "1f1b", "1F1B"},
                                            {PipelineSchedule::gpipe, "gpipe", "GPipe (all forwards, then all backwards)"},
                                            {PipelineSchedule::interleaved_1f1b, "interleaved-1f1b",
                                             "Interleaved 1F1B (several stages per GPU)"}}};
const Names<QuantBackend, 2> kBackend{{{QuantBackend::bitsandbytes, "bitsandbytes", "bitsandbytes (Linear4bit: PEFT, LitGPT)"},
                                       {QuantBackend::torchao, "torchao", "torchao (NF4Tensor: torchtune)"}}};
const Names<Attention, 2> kAttention{
    {{Attention::eager, "eager", "Eager (scores materialised)"}, {Attention::flash, "flash", "Flash / SDPA (no score matrix)"}}};
const Names<Offload, 3> kOffload{{{Offload::none, "none", "Nothing"},
                                  {Offload::optimizer, "optimizer", "Optimizer states to CPU"},
                                  {Offload::optimizer_and_params, "optimizer+params", "Optimizer and parameters to CPU"}}};
const Names<Device, 2> kDevice{{{Device::cuda, "cuda", "CUDA (the GPU)"}, {Device::cpu, "cpu", "CPU kernels (validation)"}}};
const Names<TorchVersion, 16> kTorch{{
     {TorchVersion::v2, "2", "PyTorch 2 (the newest modelled: 2.13)"},
     {TorchVersion::v2_13, "2.13", "PyTorch 2.13"},
     {TorchVersion::v2_12, "2.12", "PyTorch 2.12"},
     {TorchVersion::v2_11, "2.11", "PyTorch 2.11"},
     {TorchVersion::v2_10, "2.10", "PyTorch 2.10"},
     {TorchVersion::v2_9, "2.9", "PyTorch 2.9"},
     {TorchVersion::v2_8, "2.8", "PyTorch 2.8"},
     {TorchVersion::v2_7, "2.7", "PyTorch 2.7"},
     {TorchVersion::v2_6, "2.6", "PyTorch 2.6"},
     {TorchVersion::v2_5, "2.5", "PyTorch 2.5"},
     {TorchVersion::v2_4, "2.4", "PyTorch 2.4"},
     {TorchVersion::v2_3, "2.3", "PyTorch 2.3"},
     {TorchVersion::v2_2, "2.2", "PyTorch 2.2"},
     {TorchVersion::v2_1, "2.1", "PyTorch 2.1"},
     {TorchVersion::v2_0, "2.0", "PyTorch 2.0"},
     {TorchVersion::v1_13, "1.13", "PyTorch 1.13"}}};
const Names<Loss, 4> kLoss{{{Loss::full, "full", "Full cross-entropy (whole logits)"},
                            {Loss::chunked, "chunked", "Chunked cross-entropy"},
                            {Loss::fused, "fused", "Cross-entropy kernel over the 16-bit logits (flash-attn, Liger)"},
                            {Loss::fused_linear, "fused-linear", "Fused linear cross-entropy (Liger)"}}};
const Names<AdapterDtype, 2> kAdapterDtype{
    {{AdapterDtype::fp32, "fp32", "fp32 (PEFT)"}, {AdapterDtype::base, "base", "Base weights’ dtype (LitGPT, torchtune)"}}};
const Names<FsdpWrap, 2> kFsdpWrap{{{FsdpWrap::adapters_apart, "adapters-apart", "LoRA adapters in their own units"},
                                    {FsdpWrap::layers, "layers", "One unit per decoder layer"}}};
const Names<TrainingMethod, 10> kMethod{{{TrainingMethod::sft, "sft", "Supervised (fine-tuning or pre-training)"},
                                         {TrainingMethod::dpo, "dpo", "DPO (TRL DPOTrainer)"},
                                         {TrainingMethod::ipo, "ipo", "IPO (DPOTrainer, loss ipo)"},
                                         {TrainingMethod::kto, "kto", "KTO (TRL KTOTrainer)"},
                                         {TrainingMethod::orpo, "orpo", "ORPO (TRL ORPOTrainer)"},
                                         {TrainingMethod::simpo, "simpo", "SimPO (TRL CPOTrainer, loss simpo)"},
                                         {TrainingMethod::grpo, "grpo", "GRPO (TRL GRPOTrainer)"},
                                         {TrainingMethod::rloo, "rloo", "RLOO (TRL RLOOTrainer)"},
                                         {TrainingMethod::distill, "distill", "On-policy distillation (TRL DistillationTrainer)"},
                                         {TrainingMethod::ppo, "ppo", "PPO (TRL 1.12 PPOTrainer)"}}};
const Names<Reference, 4> kReference{{{Reference::none, "none", "None"},
                                      {Reference::model, "model", "A second model"},
                                      {Reference::base_without_adapters, "base-without-adapters", "The policy with adapters off"},
                                      {Reference::precomputed, "precomputed", "Precomputed log-probabilities"}}};
const Names<Divergence, 3> kDivergence{{{Divergence::reverse_kl, "reverse-kl", "Reverse KL (TRL’s default, beta 1)"},
                                        {Divergence::forward_kl, "forward-kl", "Forward KL (beta 0)"},
                                        {Divergence::jsd, "jsd", "Generalized JSD (0 < beta < 1)"}}};
const Names<Dtype, 3> kDtype{{{Dtype::bf16, "bf16", "bf16"}, {Dtype::fp16, "fp16", "fp16"}, {Dtype::fp32, "fp32", "fp32"}}};
const Names<InferenceEngine, 3> kEngine{{{InferenceEngine::none, "none", "In the training process (transformers generate)"},
                                         {InferenceEngine::vllm_colocate, "colocate", "vLLM colocated on the training GPUs"},
                                         {InferenceEngine::vllm_server, "server", "vLLM server on other GPUs"}}};
template <class E, std::size_t N>
std::vector<ChoiceView> view(const Names<E, N>& names) {
    std::vector<ChoiceView> out;
    for (const Choice<E>& c : names.items) out.push_back({c.name, c.label, int(c.value)});
    return out;
}

std::vector<std::string> methods_where(bool (*pick)(const MethodTraits&)) {
    std::vector<std::string> out;
    for (const Choice<TrainingMethod>& m : kMethod.items)
        if (pick(method_traits(m.value))) out.push_back(m.name);
    return out;
}
std::vector<std::string> torch_2_releases() {
    std::vector<std::string> out;
    for (const Choice<TorchVersion>& t : kTorch.items)
        if (t.value != TorchVersion::v1_13) out.push_back(t.name);
    return out;
}
std::vector<std::string> strategies_where(bool (*pick)(const StrategyTraits&)) {
    std::vector<std::string> out;
    for (const StrategyTraits& s : strategy_table())
        if (pick(s)) out.push_back(s.name);
    return out;
}

Atom is(const char* key, std::vector<std::string> values) { return {key, std::move(values), 0}; }
Atom above(const char* key, double x) { return {key, {}, x}; }
Condition all(std::vector<Atom> atoms) { return {{std::move(atoms)}}; }
Condition any(std::vector<std::vector<Atom>> alternatives) { return {std::move(alternatives)}; }

// A row under construction: each setter fills one column.
struct Row : Key {
    Row(const char* name, const char* link, KeyType type) { this->name = name, this->link = link, this->type = type; }
    Row& bind(Binding b) { value = b; return *this; }
    Row& codec(Codec c) { Key::codec = c; return *this; }
    Row& range(double l, double h, bool open = false) { lo = l, hi = h, hi_open = open; return *this; }
    Row& pick(std::vector<ChoiceView> c) { choices = std::move(c); return *this; }
    Row& when(Condition c, bool is_strict = false) { applies = std::move(c), strict = is_strict; return *this; }
    Row& needed() { required = true; return *this; }
    Row& echoed(Echo e) { echo = e; return *this; }
    Row& first(void (*rule)(Config&)) { before = rule; return *this; }
    Row& last(void (*rule)(Config&)) { late = rule; return *this; }
    Row& defaults(std::string rule) { default_rule = std::move(rule); return *this; }
    Row& after(std::vector<const char*> keys) { follows = std::move(keys); return *this; }
    Row& profile() { from_profile = true; return *this; }
    Row& shown(KeyGroup g, const char* l, const char* d) { group = g, label = l, doc = d; return *this; }
};

// The stacks as the page names them.
const std::pair<Framework, const char*> kFrameworkLabels[] = {
    {Framework::hf, "Hugging Face transformers + PEFT"}, {Framework::torchtune, "torchtune"},
    {Framework::litgpt, "LitGPT"}, {Framework::torchtitan, "torchtitan"}, {Framework::llm_foundry, "LLM Foundry (Composer)"}};

std::vector<ChoiceView> framework_choices() {
    std::vector<ChoiceView> out;
    for (const auto& [id, label] : kFrameworkLabels) out.push_back({framework_profile(id).name, label, int(id)});
    return out;
}
// A profile-governed key's default in words: each stack's current revision's value.
std::string profile_default(std::string (*value)(const FrameworkProfile&), const char* more = "") {
    std::string s;
    for (const auto& [id, label] : kFrameworkLabels)
        s += (s.empty() ? "" : ", ") + std::string(framework_profile(id).name) + ": " + value(framework_profile(id));
    return "the profile’s (" + s + ")" + more;
}

std::vector<ChoiceView> strategy_choices() {
    std::vector<ChoiceView> out;
    for (const StrategyTraits& s : strategy_table()) out.push_back({s.name, s.label, int(s.id)});
    return out;
}
std::vector<ChoiceView> gpu_choices() {
    std::vector<ChoiceView> out;
    for (const Gpu& g : gpu_catalog()) out.push_back({g.id.c_str(), g.name.c_str(), int(out.size())});
    return out;
}

std::vector<Key> build_keys() {
    const auto trl = methods_where([](const MethodTraits& t) { return t.method != TrainingMethod::sft; });
    const auto grouped = methods_where([](const MethodTraits& t) { return t.groups; });
    const auto referenced = methods_where([](const MethodTraits& t) { return t.takes_reference; });
    const std::vector<std::string> adapters{"lora", "qlora"};
    const auto multi_gpu = strategies_where([](const StrategyTraits& s) { return s.max_gpus != 1; });
    const auto staged = strategies_where([](const StrategyTraits& s) { return s.zero_stages != 1; });
    const auto offloading = strategies_where([](const StrategyTraits& s) { return s.offload != OffloadSupport::none; });
    const auto pytorch_tp = strategies_where([](const StrategyTraits& s) { return s.pytorch_tensor_parallel; });
    // Tensor parallelism: Megatron-LM's own, PyTorch's beside DDP, or on FSDP 2's device mesh; pipeline and context
    // parallelism: Megatron-LM's or FSDP 2's.
    const auto meshed = [&](bool ddp_too) {
        std::vector<std::vector<Atom>> alternatives{{is("strategy", {"megatron"})}, {is("strategy", {"fsdp"}), is("fsdp_version", {"2"})}};
        if (ddp_too) alternatives.push_back({is("strategy", {"ddp"})});
        return any(alternatives);
    };
    const Condition lora = all({is("finetune", adapters)});
    const Condition qlora = all({is("finetune", {"qlora"})});
    const Condition tp_plan = all({is("strategy", pytorch_tp), above("tp", 1)});
    using G = KeyGroup;
    using T = KeyType;
    std::vector<Row> rows;
    auto add = [&](Row r) { rows.push_back(std::move(r)); };
    auto child = [&](const char* parent, Row r) {
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (std::string(rows[i].name) == parent) r.parent = i + 1;
        rows.push_back(std::move(r));
    };

    // The stack first: its profile gives the keys below their defaults (frameworks.cpp).
    add(Row("framework", "framework", T::choice).codec(Codec::framework).pick(framework_choices()).defaults("\"hf\"")
            .shown(G::stack, "Framework", "Whose training code runs the step (hf: transformers + PEFT + TRL, which Axolotl runs too): its profile (setup/frameworks.cpp) sets precision, loss, LoRA adapter dtype, FSDP version and wrap and the module names to that stack’s defaults; any key you set overrides it."));
    add(Row("framework_version", "framework_version", T::text).codec(Codec::framework_version)
            .defaults("the current release")
            .shown(G::stack, "Framework version", "A release (\"0.2.1\") or a date (\"2024-05-20\", at most 32 characters): the stack’s revision in force then (torchtune before 0.3 and 0.5, lit-gpt’s 2023 loops, torchtitan’s RMSNorm and FSDP units, transformers before 5.10), whose defaults it sets again; the echo shows the revision applied."));
    add(Row("model", "model", T::model).codec(Codec::model).bind(member<&Config::model>())
            .first([](Config& c) { c.model = find_model_preset("llama-2-7b")->arch; }).defaults("\"llama-2-7b\"")
            .shown(G::basics, "Model", "A preset, a Hugging Face id of the bundled catalog (\"Qwen/Qwen3-8B\", any case, its hub URL, or a spelling that names one alone: \"Qwen3-8B\", \"llama 3.1 8b\"), a pasted config.json ({\"hf_config\": {...}}) or an explicit architecture (below)."));
    add(Row("finetune", "finetune", T::object).codec(Codec::finetune).pick(view(kFinetune)).defaults("\"full\"")
            .shown(G::basics, "Fine-tuning", "Every weight trained, LoRA adapters over a frozen base, or QLoRA (LoRA over a 4-bit base). In JSON \"full\", or {\"method\": \"lora\" | \"qlora\"} with the members below."));
    child("finetune", Row("finetune.method", "", T::choice).bind(member<&Config::finetune, &Finetune::method>())
                          .pick({view(kFinetune)[1], view(kFinetune)[2]})
                          .shown(G::none, "Adapter method", "\"lora\" or \"qlora\": required in the object form."));
    child("finetune", Row("finetune.rank", "rank", T::integer).bind(member<&Config::finetune, &Finetune::rank>())
                          .range(1, 65536).when(lora).defaults("8")
                          .shown(G::finetune, "LoRA rank", "The adapters’ rank r: each adapted d_in x d_out weight adds r x (d_in + d_out) trainable parameters."));
    child("finetune", Row("finetune.targets", "targets", T::list).codec(Codec::targets)
                          .first([](Config& c) { c.finetune.targets = default_adapter_targets(c.model); }).after({"model", "framework"})
                          .when(lora).defaults("the model’s query and value projections (PEFT’s default: q_proj and v_proj, LitGPT’s query and value, torchtitan’s wq and wv), else its fused one (c_attn, query_key_value, qkv_proj, Wqkv), else all-linear")
                          .shown(G::finetune, "LoRA target modules", "The model’s own module names (Llama’s q/k/v/o_proj, gate/up/down_proj; GPT-2’s c_attn/c_proj/c_fc; torchtune’s q_proj…output_proj, w1/w2/w3; LitGPT’s query/key/value/projection/mlp), the output projection by name (lm_head, output, head), or \"all-linear\"."));
    child("finetune", Row("finetune.dropout", "lora_dropout", T::number).bind(member<&Config::finetune, &Finetune::dropout>())
                          .range(0, 1, true).when(lora).defaults("0")
                          .shown(G::finetune, "LoRA dropout", "Dropout on the adapters’ input: above 0 each adapted layer also keeps its dropped input and a mask for backward."));
    add(Row("adapter_dtype", "adapter_dtype", T::choice).bind(member<&Config::adapter_dtype>()).pick(view(kAdapterDtype))
            .first([](Config& c) { c.adapter_dtype = c.framework->adapter_dtype; }).profile().when(lora)
            .defaults(profile_default([](const FrameworkProfile& p) -> std::string { return to_string(p.adapter_dtype); }))
            .shown(G::finetune, "Adapter dtype", "The dtype of the LoRA weights, their gradients, states and inputs: fp32 (PEFT) doubles them under 16-bit training; base: the frozen weights’ dtype (LitGPT, torchtune)."));
    child("finetune", Row("finetune.backend", "backend", T::choice).bind(member<&Config::finetune, &Finetune::backend>())
                          .pick(view(kBackend)).when(qlora).defaults("\"bitsandbytes\"")
                          .shown(G::finetune, "4-bit back end", "Whose 4-bit weights and matmul QLoRA runs: bitsandbytes’ Linear4bit (PEFT, LitGPT) or torchao’s NF4Tensor (torchtune); what its backward saves differs."));
    child("finetune", Row("finetune.backend_version", "backend_version", T::text).codec(Codec::release)
                          .bind(member<&Config::finetune, &Finetune::backend_version>()).when(qlora).echoed(Echo::when_set)
                          .defaults("the current release")
                          .shown(G::finetune, "Back end version", "The back end’s release (\"0.41.1\", at most 32 characters): what its 4-bit matmul saves (bitsandbytes before 0.43.2 keeps every input)."));
    child("finetune", Row("finetune.double_quant", "", T::boolean).bind(member<&Config::finetune, &Finetune::double_quant>())
                          .when(qlora).defaults("true")
                          .shown(G::none, "Double quantization", "QLoRA: the NF4 block constants quantized again (bnb_4bit_use_double_quant)."));
    child("finetune", Row("finetune.quantize_lm_head", "", T::boolean).bind(member<&Config::finetune, &Finetune::quantize_lm_head>())
                          .when(qlora).defaults("false")
                          .shown(G::none, "4-bit lm_head", "QLoRA: lm_head stored in NF4 too."));

    add(Row("gpus", "gpus", T::integer).bind(member<&Config::gpus>()).range(1, double(kMaxGpus)).defaults("1")
            .shown(G::basics, "GPUs", "Every GPU of the run: a multiple of tp x pp x cp; the data-parallel ranks are gpus / (tp x pp)."));
    add(Row("strategy", "strategy", T::choice).bind(member<&Config::strategy>()).pick(strategy_choices())
            // What torchrun and accelerate launch run over several GPUs when nothing else is said: DDP.
            .first([](Config& c) { c.strategy = c.gpus > 1 ? Strategy::ddp : Strategy::single; }).after({"gpus"})
            .defaults("\"single\" on one GPU, \"ddp\" on more")
            .shown(G::parallelism, "Strategy", "How the GPUs share the step: one GPU, DDP, DeepSpeed ZeRO, PyTorch FSDP or Megatron-LM (setup/strategies.cpp)."));
    add(Row("zero", "zero", T::integer).bind(member<&Config::zero>()).range(0, 3)
            .first([](Config& c) { c.zero = strategy_traits(c.strategy).default_zero; }).after({"strategy"})
            .when(all({is("strategy", staged)}))
            .defaults("0 (fsdp: 3)")
            .shown(G::parallelism, "ZeRO stage / sharding", "DeepSpeed’s stage 0–3; FSDP’s 0 NO_SHARD, 2 SHARD_GRAD_OP, 3 FULL_SHARD; Megatron-LM’s 1: the distributed optimizer."));
    add(Row("tp", "tp", T::integer).bind(member<&Config::tp>()).range(1, 1024).when(meshed(true)).defaults("1")
            .shown(G::parallelism, "Tensor parallel (tp)", "Megatron-LM’s, or PyTorch’s composed with FSDP 2 (torchtitan’s layouts) or beside DDP: GPUs must be a multiple of tp x pp x cp."));
    add(Row("pp", "pp", T::integer).bind(member<&Config::pp>()).range(1, 1024).when(meshed(false)).defaults("1")
            .shown(G::parallelism, "Pipeline parallel (pp)", "Megatron-LM’s, or torch.distributed.pipelining beside FSDP 2: under pipeline parallelism grad_accum is the number of micro-batches per step."));
    add(Row("cp", "cp", T::integer).bind(member<&Config::cp>()).range(1, 1024).when(meshed(false)).defaults("1")
            .shown(G::parallelism, "Context parallel (cp)", "Each GPU holds seq_len / cp tokens of every sequence; needs flash attention and divides seq_len."));
    add(Row("sequence_parallel", "sequence_parallel", T::boolean).bind(member<&Config::sequence_parallel>())
            .first([](Config& c) { c.sequence_parallel = strategy_traits(c.strategy).pytorch_tensor_parallel && c.tp > 1; })
            .after({"strategy", "tp"})
            .when(any({{is("strategy", {"megatron"})}, tp_plan.any[0]}))
            .defaults("true with PyTorch’s tensor parallelism (fsdp or ddp with tp > 1), else false")
            .shown(G::parallelism, "Sequence parallelism", "Norms, dropout and residuals on sequence shards (Megatron-LM’s flag; PyTorch’s tensor-parallel plan always does it)."));
    add(Row("loss_parallel", "loss_parallel", T::boolean).bind(member<&Config::loss_parallel>()).when(tp_plan).defaults("true")
            .shown(G::parallelism, "Loss parallel", "FSDP or DDP with tensor parallelism: the logits stay sharded over the vocabulary for the loss (torchtitan), else every rank holds them whole."));
    add(Row("pp_schedule", "pp_schedule", T::choice).bind(member<&Config::pp_schedule>()).pick(view(kSchedule))
            .when(all({above("pp", 1)})).defaults("\"1f1b\"")
            .shown(G::parallelism, "Pipeline schedule", "How many micro-batches’ activations the first stage holds at once: 1F1B, GPipe (all), or interleaved 1F1B."));
    add(Row("pp_stages_per_rank", "pp_stages_per_rank", T::integer).bind(member<&Config::pp_stages_per_rank>()).range(1, 64)
            .first([](Config& c) { c.pp_stages_per_rank = c.pp_schedule == PipelineSchedule::interleaved_1f1b ? 2 : 1; })
            .after({"pp_schedule"})
            .when(all({above("pp", 1)})).defaults("1 (interleaved-1f1b: 2)")
            .shown(G::parallelism, "Pipeline stages per GPU", "Model chunks (virtual stages) per GPU: above 1 with the interleaved schedule only."));

    add(Row("seq_len", "seq_len", T::integer).bind(member<&Config::seq_len>()).range(1, double(kMaxTokens))
            .when(all({is("method", {"sft"})})).echoed(Echo::when_applies).defaults("2048 (learned positions: at most the model’s; TRL: prompt_len + completion_len)")
            .shown(G::basics, "Sequence length (tokens)", "Tokens per sequence; under TRL’s trainers the sequence is prompt_len + completion_len."));
    add(Row("micro_batch", "micro_batch", T::integer).bind(member<&Config::micro_batch>()).range(1, double(kMaxBatch)).defaults("1")
            .shown(G::basics, "Micro-batch per GPU", "Sequences per forward on each GPU; under TRL’s trainers pairs (DPO, IPO, ORPO, SimPO), examples (KTO), completions (GRPO, RLOO) or prompts (distillation, PPO)."));
    add(Row("grad_accum", "grad_accum", T::integer).bind(member<&Config::grad_accum>()).range(1, double(kMaxBatch)).defaults("1")
            .shown(G::batch, "Gradient accumulation steps", "Micro-batches per optimizer step: multiplies the global batch. Above 1, earlier micro-batches’ gradients stay live through the next forward (unless allocated up front, as DeepSpeed and Megatron-LM do), FSDP’s no_sync accumulation keeps every layer’s unsharded gradient, and a pipeline keeps more micro-batches in flight (GPipe: all)."));
    add(Row("longest_batch_first", "longest_batch_first", T::boolean).bind(member<&Config::longest_batch_first>())
            .first([](Config& c) { c.longest_batch_first = c.framework->longest_batch_first; }).profile()
            .defaults(profile_default([](const FrameworkProfile& p) -> std::string { return p.longest_batch_first ? "true" : "false"; }, "; lit-gpt from 2023-06-21 to 2024-02-29: true"))
            .shown(G::batch, "Longest batch comes first", "The loop runs the longest sample first (lit-gpt’s scripts, June 2023 to February 2024): the estimate is of that first micro-batch, with no gradients, optimizer states or previous step yet."));

    std::vector<ChoiceView> precisions = view(kPrecision);
    precisions.push_back({kFp8, kFp8Label, -1});
    add(Row("precision", "precision", T::choice).codec(Codec::precision).bind(member<&Config::precision>()).pick(precisions)
            .profile().after({"finetune", "strategy", "method", "gpu", "device"})
            .first([](Config& c) {
                for (const Choice<Precision>& p : kPrecision.items)
                    if (std::string(p.name) == c.framework->precision) c.precision = p.value;
            })
            // Adapters under PEFT (fp32 adapters over bf16 autocast) get its recipe: the frozen base loaded in bf16.
            // (LitGPT's bf16-mixed keeps fp32 weights and base-dtype adapters: its own. PPO loads the value model it
            // trains whole like the policy: not the recipe.)
            // A GPU without bf16 (Volta, Turing) runs the profile's recipe in fp16: transformers' Trainer refuses
            // bf16=True there (training_args.py, "Your setup doesn't support bf16/gpu"), Lightning's bf16-mixed
            // autocasts to a dtype the GPU does not compute in.
            .last([](Config& c) {
                if (c.precision == Precision::bf16_mixed && c.framework->adapter_dtype == AdapterDtype::fp32 &&
                    c.finetune.method != FinetuneMethod::full && adapter_recipe_allowed(c))
                    c.precision = Precision::bf16_base_mixed;
                if (c.device == Device::cuda && !supports_bf16(c.gpu)) c.precision = fp16_counterpart(c.precision);
            })
            .defaults(profile_default([](const FrameworkProfile& p) -> std::string { return p.precision; }, "; LoRA/QLoRA on one GPU or DDP with fp32 adapters, bf16-mixed: bf16-base-mixed; on a GPU without bf16 (V100, T4) its fp16 counterpart"))
            .shown(G::precision, "Precision", "32-true; bf16/16-mixed (autocast over fp32 weights); bf16/16-true (everything 16-bit); the adapter recipe bf16/16-base-mixed (a 16-bit frozen base, fp32 adapters); fp8 (bf16 mixed whose linears compute in float8). Under DeepSpeed or Megatron-LM 16-bit mixed means 16-bit weights and gradients plus fp32 master weights."));
    add(Row("fp8_recipe", "fp8_recipe", T::choice).codec(Codec::fp8_recipe).bind(member<&Config::fp8_recipe>()).pick(view(kFp8Recipe))
            .after({"precision"})
            .when(all({is("precision", {kFp8})}), true).echoed(Echo::when_applies).defaults("\"torchao-tensorwise\"")
            .shown(G::precision, "FP8 recipe", "torchao’s Float8Linear (tensorwise or rowwise scaling) saves its bf16 input and weight: FP8 speeds the matmuls, it does not shrink the activations. Transformer Engine (delayed or current scaling, read from its v2.18 source) saves 1-byte inputs and keeps fp8 weight copies."));
    add(Row("optimizer", "optimizer", T::choice).bind(member<&Config::optimizer>()).pick(view(kOptimizer)).defaults("\"adamw\"")
            .shown(G::precision, "Optimizer", "AdamW, bitsandbytes’ 8-bit and paged AdamW (paged states live in unified memory: in total_bytes, not in the allocated peak), Adafactor, Lion, SGD."));
    add(Row("optimizer_impl", "optimizer_impl", T::choice).bind(member<&Config::optimizer_impl>()).pick(view(kImpl)).defaults("\"foreach\"")
            .shown(G::precision, "Optimizer implementation", "torch.optim’s foreach (the CUDA default), fused or single-tensor step: what the step allocates."));
    add(Row("optimizer_in_backward", "optimizer_in_backward", T::boolean).bind(member<&Config::optimizer_in_backward>()).defaults("false")
            .shown(G::precision, "Optimizer step in backward", "Each gradient is applied and freed as backward produces it (torchtune’s optimizer_in_bwd): no full set of gradients."));

    add(Row("loss", "loss", T::choice).bind(member<&Config::loss>()).pick(view(kLoss))
            .first([](Config& c) { c.loss = c.framework->loss; }).profile().defaults(profile_default([](const FrameworkProfile& p) -> std::string { return to_string(p.loss); }))
            .shown(G::savers, "Loss", "How the loss meets the logits: whole with an fp32 copy, a chunk at a time, a kernel over the 16-bit logits, or fused with lm_head (no logits kept)."));
    add(Row("loss_chunks", "loss_chunks", T::integer).bind(member<&Config::loss_chunks>()).range(1, double(kMaxTokens))
            .first([](Config& c) {
                c.loss_chunks = c.framework->loss_chunks;
                // LitGPT's chunks are 128-token blocks (lm_head_chunk_size, chunked_cross_entropy's chunk_size).
                if (c.framework->loss_chunks == 0)
                    c.loss_chunks = std::clamp<std::uint64_t>((c.micro_batch * c.seq_len + 127) / 128, 1, kMaxTokens);
            })
            .profile().after({"micro_batch", "seq_len"})
            .when(all({is("loss", {"chunked"})})).defaults(profile_default([](const FrameworkProfile& p) -> std::string { return p.loss_chunks ? std::to_string(p.loss_chunks) : "one per 128 tokens"; }))
            .shown(G::savers, "Loss chunks", "Chunks of the loss: more chunks, smaller fp32 pieces of the logits alive at once."));
    add(Row("lm_head_chunks", "lm_head_chunks", T::boolean).bind(member<&Config::lm_head_chunks>())
            .first([](Config& c) { c.lm_head_chunks = c.framework->lm_head_chunks_for_lora && c.finetune.method != FinetuneMethod::full; })
            .profile().after({"finetune"})
            .when(all({is("loss", {"chunked"})})).defaults(profile_default([](const FrameworkProfile& p) -> std::string { return p.lm_head_chunks_for_lora ? "true with LoRA" : "false"; }))
            .shown(G::savers, "Output projection per chunk", "lm_head runs per loss chunk too (LitGPT’s LoRA script), so backward holds one chunk’s logit gradients."));
    add(Row("checkpointing", "checkpointing", T::choice).codec(Codec::checkpointing).bind(member<&Config::checkpointing>())
            .pick(view(kCheckpointing))
            // TRL's configs default gradient_checkpointing to True (trl/trainer/base_config.py _BaseConfig); TRL 1.12's
            // PPOTrainer never applies it.
            .last([](Config& c) { if (is_trl(c) && c.method != TrainingMethod::ppo) c.checkpointing = Checkpointing::full; })
            .after({"method"})
            .defaults("\"none\" (TRL’s trainers but PPO: \"full\")")
            .shown(G::savers, "Activation checkpointing", "none; selective (Megatron-LM’s: attention scores recomputed); selective-op (torchtitan’s per-op policy); full; or {\"mode\": \"layers\", \"every\": N} (every N-th layer)."));
    child("checkpointing", Row("checkpointing.every", "", T::integer).bind(member<&Config::checkpoint_every>())
                               .range(1, double(kMaxLayers)).defaults("1")
                               .shown(G::none, "Checkpoint every N-th layer", "{\"mode\": \"layers\", \"every\": N}: full checkpointing of every N-th layer only (torchtitan’s ac_freq)."));
    add(Row("activation_offload", "activation_offload", T::boolean).bind(member<&Config::activation_offload>()).defaults("false")
            .shown(G::savers, "Offload activations to CPU", "Saved activations go to pinned CPU RAM in forward and come back ahead of their backward (torchtune’s offloading; read from its code, CUDA only): about two layers stay on the GPU."));
    add(Row("attention", "attention", T::choice).bind(member<&Config::attention>()).pick(view(kAttention)).defaults("\"flash\"")
            .shown(G::savers, "Attention kernel", "Eager attention stores the scores; flash / SDPA does not."));
    add(Row("offload", "offload", T::choice).bind(member<&Config::offload>()).pick(view(kOffload))
            .when(all({is("strategy", offloading)})).defaults("\"none\"")
            .shown(G::savers, "Offload to CPU", "DeepSpeed ZeRO-Offload (the optimizer from stage 1, its parameters at stage 3) or FSDP CPU offload (parameters, gradients and the step)."));
    add(Row("fsdp_version", "fsdp_version", T::integer).bind(member<&Config::fsdp_version>()).range(1, 2)
            .pick({{"1", "FSDP 1 (FullyShardedDataParallel)", 1}, {"2", "FSDP 2 (fully_shard)", 2}})
            .first([](Config& c) { c.fsdp_version = c.framework->fsdp_version; }).profile().when(all({is("strategy", {"fsdp"})}))
            .defaults(profile_default([](const FrameworkProfile& p) -> std::string { return std::to_string(p.fsdp_version); }, "; hf before transformers 5.10: 1"))
            .shown(G::parallelism, "FSDP version", "FSDP 1 (FullyShardedDataParallel) or FSDP 2 (fully_shard)."));
    add(Row("fsdp_wrap", "fsdp_wrap", T::choice).bind(member<&Config::fsdp_wrap>()).pick(view(kFsdpWrap))
            .first([](Config& c) { c.fsdp_wrap = c.framework->fsdp_wrap; }).profile()
            .when(all({is("strategy", {"fsdp"}), is("finetune", adapters)}))
            .defaults(profile_default([](const FrameworkProfile& p) -> std::string { return to_string(p.fsdp_wrap); }))
            .shown(G::parallelism, "FSDP units under LoRA", "Adapters in their own units (PEFT’s policy, as transformers’ Trainer installs it), or one unit per decoder layer: FSDP 1 then saves and keeps gradients as for full fine-tuning."));

    add(Row("gpu", "gpu", T::object).codec(Codec::gpu).pick(gpu_choices())
            .first([](Config& c) { c.gpu = *find_gpu("a100-80gb"); }).defaults("\"a100-80gb\"")
            .shown(G::basics, "GPU", "A catalog GPU, or a custom one by its memory (and, for the step time, its dense TFLOP/s and GB/s). In JSON a catalog id or {\"name\", \"memory_gib\", ...}."));
    child("gpu", Row("gpu.name", "gpu.name", T::text).codec(Codec::gpu_name).bind(member<&Config::gpu, &Gpu::name>())
                     .defaults("\"Custom GPU\"").shown(G::gpu, "Name", "A custom GPU’s name (at most 100 characters)."));
    child("gpu", Row("gpu.memory_gib", "gpu.memory_gib", T::number).bind(member<&Config::gpu, &Gpu::memory_gib>())
                     .range(0.0625, 1 << 20).defaults("required").shown(G::gpu, "Memory (GiB)", "A custom GPU’s memory as nvidia-smi reports it."));
    const std::pair<const char*, Binding> rates[] = {
        {"gpu.bf16_tflops", member<&Config::gpu, &Gpu::bf16_tflops>()}, {"gpu.fp16_tflops", member<&Config::gpu, &Gpu::fp16_tflops>()},
        {"gpu.fp32_tflops", member<&Config::gpu, &Gpu::fp32_tflops>()}, {"gpu.bandwidth_gbps", member<&Config::gpu, &Gpu::bandwidth_gbps>()},
        {"gpu.link_gbps", member<&Config::gpu, &Gpu::link_gbps>()}, {"gpu.pcie_gbps", member<&Config::gpu, &Gpu::pcie_gbps>()}};
    const char* rate_docs[] = {"Dense bf16 tensor-core TFLOP/s (for the step time).", "Dense fp16 tensor-core TFLOP/s (default: bf16_tflops).",
                               "fp32 TFLOP/s without tensor cores.", "HBM GB/s.", "GB/s per direction to the node’s other GPUs (NVLink, else PCIe).",
                               "GB/s per direction to the host."};
    for (std::size_t i = 0; i < 6; ++i) {
        Row r(rates[i].first, "", T::number);
        r.bind(rates[i].second).range(0, 1e6).echoed(Echo::when_set).defaults(i == 1 ? "bf16_tflops" : "0 (unknown)")
            .shown(G::none, rates[i].first + 4, rate_docs[i]);
        if (i == 1) r.first([](Config& c) { c.gpu.fp16_tflops = c.gpu.bf16_tflops; }).after({"gpu.bf16_tflops"});
        child("gpu", std::move(r));
    }
    child("gpu", Row("gpu.compute_capability", "", T::number).bind(member<&Config::gpu, &Gpu::compute_capability>())
                     .range(0, 20).echoed(Echo::when_set).defaults("0 (not stated: bf16 and FP8 taken as supported)")
                     .shown(G::none, "compute_capability", "A custom GPU’s NVIDIA compute capability (8.0 A100, 8.9 Ada, 9.0 H100). As for a catalog GPU, it decides bf16 and FP8 support, the attention kernels, the cuBLAS workspace and attention’s share of the peak."));
    add(Row("device", "device", T::choice).bind(member<&Config::device>()).pick(view(kDevice)).defaults("\"cuda\"")
            .shown(G::gpu, "Kernels", "\"cuda\", or \"cpu\" to model PyTorch’s CPU kernels (what the CPU validation measures)."));
    add(Row("torch", "torch", T::choice).bind(member<&Config::torch>()).pick(view(kTorch)).defaults("\"2\"")
            .shown(G::stack, "PyTorch version", "The release that runs: what the optimizer and RMSNorm backward allocate changed between 1.13 and 2; the allocator’s options and the NCCL each wheel ships change by release."));
    add(Row("alloc_conf", "alloc_conf", T::text).codec(Codec::alloc_conf).bind(member<&Config::alloc_conf>())
            .when(all({is("torch", torch_2_releases())}), true).echoed(Echo::when_set).defaults("\"\" (PyTorch’s defaults)")
            .shown(G::stack, "PYTORCH_CUDA_ALLOC_CONF", "The caching allocator’s options in PyTorch’s own syntax (\"expandable_segments:True,max_split_size_mb:128\"), checked as the torch release in force reads them (setup/alloc_conf.cpp); the replay of a QLoRA model’s loading follows them."));
    add(Row("compile", "", T::boolean).bind(member<&Config::compile>()).defaults("false")
            .shown(G::stack, "torch.compile", "Estimated as eager, with a warning that the activations are then an upper bound."));

    // TRL's trainers (training_methods.cpp, trl_phases.cpp).
    add(Row("method", "method", T::choice).bind(member<&Config::method>()).pick(view(kMethod)).defaults("\"sft\"")
            .shown(G::basics, "Method", "Supervised training, or one of TRL’s trainers (TRL 1.16; PPO from TRL 1.12’s PPOTrainer), each measured in tests/validation/stacks/trl*: on one GPU or DDP, DPO, IPO, KTO, GRPO and RLOO also under FSDP (zero 2 or 3). Phases become the trainer’s passes (generation, old_logps, reference, teacher, value, reward, policy_forward, loss, backward, optimizer_step ...)."));
    add(Row("reference", "reference", T::choice).bind(member<&Config::reference>()).pick(view(kReference))
            .first([](Config& c) {
                // TRL's defaults: a second model for a full fine-tune, the policy with its adapters off for a PEFT one
                // (DPO, KTO, RLOO's beta 0.05, PPO); GRPO's beta 0 and the reference-free methods take none.
                if (method_traits(c.method).reference_by_default)
                    c.reference = c.finetune.method == FinetuneMethod::full ? Reference::model : Reference::base_without_adapters;
            })
            .after({"method", "finetune"})
            .when(all({is("method", referenced)})).echoed(Echo::when_applies)
            .defaults("DPO/IPO/KTO/RLOO/PPO: model (full) or base-without-adapters (LoRA); others: none")
            .shown(G::method, "Reference log-probabilities", "A second model in the policy’s load dtype, the policy with its adapters off (LoRA), log-probs precomputed before training, or none (GRPO’s beta 0)."));
    add(Row("prompt_len", "prompt_len", T::integer).bind(member<&Config::prompt_len>()).range(1, double(kMaxTokens))
            .when(all({is("method", trl)})).echoed(Echo::when_applies).defaults("required")
            .shown(G::basics, "Prompt tokens", "The prompt’s tokens: the sequence is prompt + completion."));
    add(Row("completion_len", "completion_len", T::integer).bind(member<&Config::completion_len>()).range(1, double(kMaxTokens))
            .when(all({is("method", trl)})).echoed(Echo::when_applies).defaults("required")
            .shown(G::basics, "Completion tokens", "The completion’s tokens; a pair’s chosen and rejected each (DPO, IPO, ORPO, SimPO)."));
    add(Row("num_generations", "num_generations", T::integer).bind(member<&Config::num_generations>()).range(1, double(kMaxBatch))
            .first([](Config& c) { if (c.method == TrainingMethod::rloo) c.num_generations = 2; }).after({"method"})  // RLOOConfig's
            .when(all({is("method", grouped)}), true).echoed(Echo::when_applies).defaults("8 (RLOO: 2)")
            .shown(G::method, "Generations per prompt", "GRPO’s and RLOO’s completions per prompt: must divide the completions of a generation."));
    add(Row("inference_engine", "vllm", T::choice).codec(Codec::inference_engine).bind(member<&Config::inference_engine>())
            .pick(view(kEngine)).when(all({is("method", grouped)})).echoed(Echo::when_applies).defaults("\"none\"")
            .shown(G::method, "Generation", "Where GRPO’s and RLOO’s completions are generated: transformers’ generate in the training process, a vLLM engine colocated on the training GPUs, or a vLLM server on other GPUs. In JSON \"none\" or {\"name\": \"vllm\", \"mode\": \"colocate\" | \"server\"} with the members below."));
    const Condition colocated = all({is("method", grouped), is("inference_engine", {"colocate"})});
    child("inference_engine", Row("inference_engine.gpu_memory_utilization", "vllm_share", T::number)
                                  .bind(member<&Config::inference_gpu_share>()).range(0.01, 0.95).when(colocated).defaults("0.3")
                                  .shown(G::method, "vLLM’s share of the GPU", "gpu_memory_utilization (TRL’s default 0.3): reserved on each training GPU for vLLM’s weights and KV cache."));
    child("inference_engine", Row("inference_engine.sleep_mode", "vllm_sleep", T::boolean)
                                  .bind(member<&Config::inference_sleep_mode>()).when(colocated).defaults("false")
                                  .shown(G::method, "vLLM sleep mode", "vllm_enable_sleep_mode: vLLM frees its share after each generation, so it meets only the model states of that moment."));
    add(Row("steps_per_generation", "steps_per_generation", T::integer).bind(member<&Config::steps_per_generation>())
            .range(1, double(kMaxBatch))
            // TRL's GRPOConfig and RLOOConfig: steps_per_generation defaults to gradient_accumulation_steps.
            .first([](Config& c) { c.steps_per_generation = c.grad_accum; }).after({"grad_accum"})
            .when(all({is("method", grouped)}), true).echoed(Echo::when_applies).defaults("grad_accum")
            .shown(G::method, "Steps per generation", "Micro-batches’ completions generated at once (TRL’s default: the accumulation steps): the KV cache grows with it."));
    add(Row("num_iterations", "num_iterations", T::integer).bind(member<&Config::num_iterations>()).range(1, double(kMaxBatch))
            .when(all({is("method", grouped)}), true).echoed(Echo::when_applies).defaults("1")
            .shown(G::method, "Updates per generation", "num_iterations: above 1, or when grad_accum is not a multiple of steps_per_generation x num_iterations, the policy’s old log-probs are scored too."));
    const Condition distill = all({is("method", {"distill"})});
    add(Row("teacher", "teacher", T::model).codec(Codec::model).bind(member<&Config::teacher>()).when(distill, true).needed()
            .echoed(Echo::when_applies).defaults("required with distill")
            .shown(G::method, "Teacher model", "As `model`, with the student’s vocabulary."));
    add(Row("teacher_dtype", "teacher_dtype", T::choice).bind(member<&Config::teacher_dtype>()).pick(view(kDtype)).when(distill, true)
            .echoed(Echo::when_applies).defaults("\"bf16\"")
            .shown(G::method, "Teacher dtype", "TRL loads the teacher in its checkpoint’s dtype (teacher_model_init_kwargs to change it)."));
    add(Row("divergence", "divergence", T::choice).bind(member<&Config::divergence>()).pick(view(kDivergence)).when(distill, true)
            .echoed(Echo::when_applies).defaults("\"reverse-kl\"")
            .shown(G::method, "Divergence", "TRL’s beta: 1 reverse KL, 0 forward KL, between: the generalized JSD."));
    // PPO (TRL 1.12's PPOConfig: local_rollout_forward_batch_size 64, num_mini_batches 1); the value and reward models
    // default to the policy's architecture, as in TRL's example script.
    const Condition ppo = all({is("method", {"ppo"})});
    add(Row("rollout_forward_batch", "rollout_forward_batch", T::integer).bind(member<&Config::rollout_forward_batch>())
            .range(1, double(kMaxBatch)).when(ppo, true).echoed(Echo::when_applies).defaults("64")
            .shown(G::method, "Rollout rows at a time", "local_rollout_forward_batch_size: prompts generated and scored at once; generation’s KV cache and the reference’s whole logits grow with it."));
    add(Row("num_mini_batches", "num_mini_batches", T::integer).bind(member<&Config::num_mini_batches>()).range(1, double(kMaxBatch))
            .when(ppo, true).echoed(Echo::when_applies).defaults("1")
            .shown(G::method, "Mini-batches per rollout", "The rollout is micro_batch x grad_accum x num_mini_batches prompts; generate’s fp32 scores of the whole rollout stay live through the update."));
    add(Row("value_model", "value_model", T::model).codec(Codec::model).bind(member<&Config::value_model>())
            .first([](Config& c) { c.value_model = c.model; }).after({"model"}).when(ppo, true).echoed(Echo::when_applies).defaults("the policy’s model")
            .shown(G::method, "Value model", "The critic (a 1-output score head on a backbone), trained whole beside the policy in its precision and optimizer."));
    add(Row("reward_model", "reward_model", T::model).codec(Codec::model).bind(member<&Config::reward_model>())
            .first([](Config& c) { c.reward_model = c.model; }).after({"model"}).when(ppo, true).echoed(Echo::when_applies).defaults("the policy’s model")
            .shown(G::method, "Reward model", "Frozen: it scores each rollout’s completions, no gradients."));
    add(Row("reward_dtype", "reward_dtype", T::choice).codec(Codec::optional_dtype).pick(view(kDtype)).when(ppo, true)
            .echoed(Echo::when_set).defaults("the policy’s weight dtype")
            .shown(G::method, "Reward model dtype", "The dtype the frozen reward model is loaded in."));

    // The machine and the run, for time and cost (step_time.cpp).
    const Condition several = all({above("gpus", 1)});
    add(Row("gpus_per_node", "gpus_per_node", T::integer).bind(member<&Config::gpus_per_node>()).range(1, 1024).when(several)
            .defaults("8").shown(G::run, "GPUs per node", "GPUs sharing NVLink; the rest talk over the network."));
    add(Row("inter_node_gbps", "inter_node_gbps", T::number).bind(member<&Config::inter_node_gbps>()).range(0, 1e6).when(several)
            .defaults("0 (the GPU’s reference system)")
            .shown(G::run, "Network per GPU between nodes (GB/s)", "0: the GPU’s reference system (DGX / HGX)."));
    add(Row("train_tokens", "train_tokens", T::number).bind(member<&Config::train_tokens>()).range(0, 1e18).defaults("0")
            .shown(G::run, "Tokens to train on", "The whole run, for its hours and GPU-hours; 0: epochs x dataset_tokens."));
    const Condition untimed = any({{{"train_tokens", {"0"}, 0}}});
    add(Row("epochs", "epochs", T::number).bind(member<&Config::epochs>()).range(0, 1e6).when(untimed).defaults("0")
            .shown(G::run, "Epochs", "With dataset_tokens, the run’s tokens when train_tokens is 0."));
    add(Row("dataset_tokens", "dataset_tokens", T::number).bind(member<&Config::dataset_tokens>()).range(0, 1e18).when(untimed)
            .defaults("0").shown(G::run, "Tokens in the dataset", "With epochs, the run’s tokens when train_tokens is 0."));
    add(Row("price_per_gpu_hour", "price_per_gpu_hour", T::number).codec(Codec::price).bind(member<&Config::price_per_gpu_hour>())
            .range(0, 1e6).defaults("0 (no built-in prices)")
            .shown(G::run, "Price per GPU-hour", "In any currency: the cost comes out in the same. Or an object from catalog GPU id to price ({\"h100-80gb\": 2.9, \"a100-80gb\": 1.8}): the run’s GPU takes its own, and sizing prices each GPU it has."));

    // The planner (advice/planner.cpp): the fastest changes that fit, and what it may change.
    add(Row("plan", "", T::object).codec(Codec::plan).echoed(Echo::when_set).defaults("false")
            .shown(G::none, "Make it fit", "true, or an object of the members below: the report adds `plans`, the fastest combinations of known changes that fit, and `plans_changing_training`, those that also change what is trained (LoRA for full fine-tuning, a shorter sequence, fewer generations)."));
    child("plan", Row("plan.keep_method", "", T::boolean).bind(member<&Config::plan, &PlanRequest::keep_method>()).defaults("false")
                      .shown(G::none, "Keep what is trained", "true: no plans that change what is trained (plans_changing_training stays empty)."));
    child("plan", Row("plan.keep_global_batch", "", T::boolean).bind(member<&Config::plan, &PlanRequest::keep_global_batch>())
                      .defaults("true").shown(G::none, "Keep the global batch", "micro_batch x grad_accum x data-parallel ranks stays as given; false: plans pick the micro-batch (grad_accum as given) and rank by tokens per second."));
    child("plan", Row("plan.keep_gpus", "", T::boolean).bind(member<&Config::plan, &PlanRequest::keep_gpus>()).defaults("true")
                      .shown(G::none, "Keep the GPU count", "false: plans may use 1, 2, 4 or 8 GPUs or 16, 32, ... (nodes of 8) up to max_gpus, and rank by cost where a price is given."));
    child("plan", Row("plan.max_gpus", "", T::integer).bind(member<&Config::plan, &PlanRequest::max_gpus>()).range(1, 65536)
                      .defaults("64").shown(G::none, "At most this many GPUs", "Without keep_gpus, and for sizing (`vramcalc sizing`)."));
    child("plan", Row("plan.strategies", "", T::list).codec(Codec::strategies).echoed(Echo::when_set).defaults("every strategy")
                      .shown(G::none, "Strategies a plan may use", "A list of strategy names (single, ddp, deepspeed, fsdp, megatron); empty: every one."));
    return {rows.begin(), rows.end()};
}

}  // namespace

const std::vector<Key>& config_keys() {
    static const std::vector<Key> keys = build_keys();
    return keys;
}

const Key* find_key(std::string_view name) {
    using Entry = std::pair<std::string_view, const Key*>;
    static const std::vector<Entry> by_name = [] {  // sorted by name: a binary search
        std::vector<Entry> v;
        for (const Key& k : config_keys()) v.emplace_back(k.name, &k);
        std::sort(v.begin(), v.end());
        return v;
    }();
    const auto it = std::lower_bound(by_name.begin(), by_name.end(), Entry{name, nullptr});
    return it != by_name.end() && it->first == name ? it->second : nullptr;
}

const ChoiceView* choice_of(const Key& k, int value) {
    for (const ChoiceView& v : k.choices)
        if (v.value == value) return &v;
    return nullptr;
}

namespace {

std::string exact_text(double d) {
    char s[32];
    std::snprintf(s, sizeof s, "%.17g", d);
    return s;
}

// A key's value as the schema's conditions compare it: a choice's name, a number, true or false.
std::string value_text(const Key& k, const Config& c) {
    switch (k.codec) {
        case Codec::framework: return c.framework->name;
        case Codec::precision: if (c.fp8_recipe != Fp8Recipe::none) return "fp8"; break;
        case Codec::finetune: return choice_of(k, int(c.finetune.method))->name;
        default: break;
    }
    const void* p = k.value.at_const ? k.value.at_const(c) : nullptr;
    using K = Binding::Kind;
    switch (k.value.kind) {
        case K::u64: return std::to_string(*static_cast<const std::uint64_t*>(p));
        case K::i32: return std::to_string(*static_cast<const int*>(p));
        case K::f64: return exact_text(*static_cast<const double*>(p));
        case K::flag: return *static_cast<const bool*>(p) ? "true" : "false";
        case K::text: return *static_cast<const std::string*>(p);
        case K::enumeration: {
            const ChoiceView* v = choice_of(k, k.value.get_enum(p));
            return v ? v->name : "";
        }
        default: return "";
    }
}

bool holds(const Atom& a, const Config& c) {
    const Key* k = find_key(a.key);
    if (!k) return false;
    const std::string v = value_text(*k, c);
    if (a.in.empty()) return std::strtod(v.c_str(), nullptr) > a.above;
    return std::find(a.in.begin(), a.in.end(), v) != a.in.end();
}

}  // namespace

bool key_applies(const Key& k, const Config& c) {
    if (k.applies.always()) return true;
    for (const std::vector<Atom>& all : k.applies.any)
        if (std::all_of(all.begin(), all.end(), [&](const Atom& a) { return holds(a, c); })) return true;
    return false;
}

// `"method": "grpo" or "rloo"`: a condition in the JSON format's words.
std::string condition_text(const Condition& cond) {
    std::string s;
    for (const std::vector<Atom>& all : cond.any) {
        std::string alt;
        for (const Atom& a : all) {
            std::string atom = "\"" + std::string(a.key) + "\"";
            if (a.in.empty()) atom += " above " + exact_text(a.above);
            // A list of most of a key's choices reads shorter as the ones it leaves out.
            std::vector<std::string> out;
            if (const Key* k = find_key(a.key); k && 2 * a.in.size() > k->choices.size())
                for (const ChoiceView& c : k->choices)
                    if (std::find(a.in.begin(), a.in.end(), c.name) == a.in.end()) out.push_back(c.name);
            const std::vector<std::string>& listed = out.empty() ? a.in : out;
            for (std::size_t i = 0; i < listed.size(); ++i)
                atom += (i == 0 ? (out.empty() ? ": \"" : " not \"") : i + 1 == listed.size() ? " or \"" : ", \"") +
                        listed[i] + "\"";
            alt += (alt.empty() ? "" : " and ") + atom;
        }
        s += (s.empty() ? "" : "; or ") + alt;
    }
    return s;
}


const std::vector<GroupRow>& key_groups() {
    static const std::vector<GroupRow> groups = [] {
        const Condition never;
        const auto trl = methods_where([](const MethodTraits& t) { return t.method != TrainingMethod::sft; });
        std::vector<std::string> stacks;  // every framework but the default, the first choice
        for (const ChoiceView& c : find_key("framework")->choices)
            if (&c != &find_key("framework")->choices.front()) stacks.push_back(c.name);
        return std::vector<GroupRow>{
            // What a first-time user knows: the model, the GPU and how many, what is trained and how, the batch.
            {KeyGroup::basics, "The run",
             {"model", "gpu", "gpus", "finetune", "method", "seq_len", "prompt_len", "completion_len", "micro_batch"},
             true, never},
            {KeyGroup::parallelism, "Parallelism", {}, false, all({above("gpus", 1)})},
            {KeyGroup::finetune, "Fine-tuning", {}, false, all({is("finetune", {"lora", "qlora"})})},
            {KeyGroup::method, "Training method", {}, false, all({is("method", trl)})},
            {KeyGroup::batch, "Batch", {}, false, never},
            {KeyGroup::precision, "Precision & optimizer", {}, false, never},
            {KeyGroup::savers, "Memory savers", {}, false, never},
            {KeyGroup::stack, "Training stack", {}, false, all({is("framework", stacks)})},
            {KeyGroup::model, "Model", {}, false, never},
            {KeyGroup::gpu, "GPU", {}, false, never},
            {KeyGroup::run, "Run and cost", {}, false, never}};
    }();
    return groups;
}

void Binding::copy(const Config& from, Config& to) const {
    if (!at || !at_const) return;
    const void* a = at_const(from);
    void* b = at(to);
    switch (kind) {
        case Kind::u64: *static_cast<std::uint64_t*>(b) = *static_cast<const std::uint64_t*>(a); break;
        case Kind::i32: *static_cast<int*>(b) = *static_cast<const int*>(a); break;
        case Kind::f64: *static_cast<double*>(b) = *static_cast<const double*>(a); break;
        case Kind::flag: *static_cast<bool*>(b) = *static_cast<const bool*>(a); break;
        case Kind::text: *static_cast<std::string*>(b) = *static_cast<const std::string*>(a); break;
        case Kind::enumeration: set_enum(b, get_enum(a)); break;
        case Kind::architecture: *static_cast<Architecture*>(b) = *static_cast<const Architecture*>(a); break;
        case Kind::none: break;
    }
}

const char* to_string(KeyType t) {
    switch (t) {
        case KeyType::integer: return "integer";
        case KeyType::number: return "number";
        case KeyType::boolean: return "boolean";
        case KeyType::choice: return "choice";
        case KeyType::text: return "text";
        case KeyType::list: return "list";
        case KeyType::model: return "model";
        case KeyType::object: return "object";
    }
    return "?";
}

namespace {

const char* group_id(KeyGroup g) {
    static const char* ids[] = {"basics", "model", "finetune", "method", "batch", "precision", "savers", "parallelism",
                                "gpu", "stack", "run", "none"};
    return ids[int(g)];
}

json choices_json(const std::vector<ChoiceView>& choices) {
    json list = json::array();
    for (const ChoiceView& c : choices) list.push_back({{"name", c.name}, {"label", c.label}});
    return list;
}

json condition_json(const Condition& cond) {
    json any = json::array();
    for (const std::vector<Atom>& all : cond.any) {
        json atoms = json::array();
        for (const Atom& a : all)
            atoms.push_back(a.in.empty() ? json{{"key", a.key}, {"above", a.above}} : json{{"key", a.key}, {"in", a.in}});
        any.push_back(atoms);
    }
    return any;
}

void bounds_json(json& j, KeyType type, double lo, double hi, bool open) {
    if (type != KeyType::integer && type != KeyType::number) return;
    j["min"] = lo, j["max"] = hi;
    if (open) j["max_excluded"] = true;
}

}  // namespace

json schema_json() {
    json groups = json::array();
    for (const GroupRow& g : key_groups()) {
        json order = json::array();
        for (const char* name : g.order) order.push_back(find_key(name)->link);
        json j = {{"id", group_id(g.group)}, {"title", g.title}, {"order", std::move(order)}};
        if (g.open) j["open"] = true;
        if (!g.opens.always()) j["opens"] = condition_json(g.opens);
        groups.push_back(std::move(j));
    }
    json keys = json::array();
    for (const Key& k : config_keys()) {
        json j = {{"name", k.name}, {"type", to_string(k.type)}, {"default", k.default_rule}, {"label", k.label},
                  {"doc", k.doc}, {"group", group_id(k.group)}};
        if (*k.link) j["link"] = k.link;
        bounds_json(j, k.type, k.lo, k.hi, k.hi_open);
        if (!k.choices.empty()) j["choices"] = choices_json(k.choices);
        if (!k.applies.always()) j["applies"] = condition_json(k.applies);
        j["echo"] = k.echo == Echo::always ? "always" : k.echo == Echo::when_applies ? "when_applies" : "when_set";
        if (!k.follows.empty()) j["follows"] = k.follows;
        if (k.from_profile) j["profile"] = true;
        if (k.strict) j["strict"] = true;
        if (k.required) j["required"] = true;
        if (k.parent) j["parent"] = config_keys()[k.parent - 1].name;
        keys.push_back(std::move(j));
    }
    json architecture = json::array();
    for (const ArchitectureKey& k : architecture_keys()) {
        json j = {{"name", k.name}, {"type", to_string(k.type)}, {"default", k.default_rule}, {"doc", k.doc},
                  {"value", json::parse(k.value)}};
        bounds_json(j, k.type, k.lo, k.hi, k.hi_open);
        if (!k.choices.empty()) j["choices"] = choices_json(k.choices);
        if (k.required) j["required"] = true;
        if (k.common) j["common"] = true;
        if (*k.follows) j["follows"] = k.follows;
        if (!k.by.empty()) j["by"] = k.by;
        architecture.push_back(std::move(j));
    }
    json strategies = json::array();  // what each strategy's `zero` means, for the page
    for (const StrategyTraits& s : strategy_table()) {
        json stages = json::object();
        for (int z = 0; z < 4; ++z)
            if (s.zero_stages >> z & 1) stages[std::to_string(z)] = s.zero_labels[z];
        strategies.push_back({{"name", s.name}, {"zero", std::move(stages)}, {"max_gpus", s.max_gpus}});
    }
    json schema = json::object();  // each part moved in: an initializer list would copy them whole
    schema["groups"] = std::move(groups);
    schema["keys"] = std::move(keys);
    schema["architecture"] = std::move(architecture);
    schema["strategies"] = std::move(strategies);
    return schema;
}

namespace {

std::string number_text(double d) {
    json j = d;
    if (d == double(std::uint64_t(d)) && d < 1e15) j = std::uint64_t(d);
    return j.dump();
}

std::string values_text(KeyType type, double lo, double hi, bool open, const std::vector<ChoiceView>& choices) {
    switch (type) {
        case KeyType::integer: return "integer " + number_text(lo) + "–" + number_text(hi);
        case KeyType::number: return "number in [" + number_text(lo) + ", " + number_text(hi) + (open ? ")" : "]");
        case KeyType::boolean: return "`true`, `false`";
        case KeyType::text: return "text";
        case KeyType::list: return "list of names";
        case KeyType::model: return "a model";
        default: break;
    }
    if (choices.size() > 12) return std::to_string(choices.size()) + " choices (`vramcalc schema`)";
    std::string s;
    for (const ChoiceView& c : choices) s += (s.empty() ? "`\"" : ", `\"") + std::string(c.name) + "\"`";
    return s;
}

std::string cell(std::string s) {
    for (std::size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
    return s;
}

}  // namespace

std::string schema_markdown() {
    std::string md = "| key | values | default | applies | what it is |\n|---|---|---|---|---|\n";
    for (const Key& k : config_keys()) {
        const std::string values = k.codec == Codec::finetune ? "`\"full\"` or an object"
                                   : k.codec == Codec::gpu     ? "a catalog id or an object"
                                   : k.codec == Codec::plan    ? "`true`, `false` or an object"
                                   : k.codec == Codec::price   ? values_text(k.type, k.lo, k.hi, k.hi_open, k.choices) + " or an object"
                                                               : values_text(k.type, k.lo, k.hi, k.hi_open, k.choices);
        md += "| `" + std::string(k.name) + "` | " + cell(values) + " | " + cell(k.default_rule) + " | " +
              cell(k.applies.always() ? "" : condition_text(k.applies)) + " | " + cell(k.doc) + " |\n";
    }
    md += "\nAn explicit architecture (`\"model\": {...}`) takes:\n\n| key | values | default | what it is |\n|---|---|---|---|\n";
    for (const ArchitectureKey& k : architecture_keys())
        md += "| `" + std::string(k.name) + "` | " + cell(values_text(k.type, k.lo, k.hi, k.hi_open, k.choices)) + " | " +
              cell(k.default_rule) + " | " + cell(k.doc) + " |\n";
    return md;
}

// The enumerations' names, for the rest of the core.
const char* to_string(Precision e) { return kPrecision.name(e); }
const char* to_string(Optimizer e) { return kOptimizer.name(e); }
const char* to_string(OptimizerImpl e) { return kImpl.name(e); }
const char* to_string(FinetuneMethod e) { return kFinetune.name(e); }
const char* to_string(Fp8Recipe e) { return e == Fp8Recipe::none ? "none" : kFp8Recipe.name(e); }
const char* to_string(Checkpointing e) { return kCheckpointing.name(e); }
const char* to_string(Attention e) { return kAttention.name(e); }
const char* to_string(Strategy e) { return strategy_traits(e).name; }
const char* to_string(Offload e) { return kOffload.name(e); }
const char* to_string(Device e) { return kDevice.name(e); }
const char* to_string(TorchVersion e) { return kTorch.name(e); }
TorchRelease torch_release(TorchVersion e) {
    if (e == TorchVersion::v1_13) return {1, 13};
    return e == TorchVersion::v2 ? kNewestAllocatorRelease : *parse_torch_release(kTorch.name(e));
}
const char* to_string(Loss e) { return kLoss.name(e); }
const char* to_string(AdapterDtype e) { return kAdapterDtype.name(e); }
const char* to_string(PipelineSchedule e) { return kSchedule.name(e); }
const char* to_string(QuantBackend e) { return kBackend.name(e); }
const char* to_string(TrainingMethod e) { return kMethod.name(e); }
const char* to_string(Reference e) { return kReference.name(e); }
const char* to_string(Divergence e) { return kDivergence.name(e); }
const char* to_string(FsdpWrap e) { return kFsdpWrap.name(e); }
const char* to_string(Dtype e) { return kDtype.name(e); }

}  // namespace vramcalc
