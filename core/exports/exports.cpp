#include "exports/exports.hpp"

#include <algorithm>
#include <cctype>

#include "exports/export_text.hpp"
#include "exports/trl_exports.hpp"
#include "memory/memory_common.hpp"
#include "model/presets.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

using nlohmann::json;

std::string model_id(const Architecture& a) {
    if (const ModelPreset* p = find_model_preset(a.id)) return p->source;
    return a.id.find('/') == std::string::npos ? "" : a.id;
}

namespace {

// The learning rate, weight decay and clipping of deepspeed_config, repeated by the exports that run with it (a
// Trainer given a DeepSpeed file refuses values that differ).
constexpr double kLearningRate = 1e-5, kWeightDecay = 0.01, kGradientClipping = 1.0;

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }
bool uses(const Config& c, Framework f) { return c.framework->id == f; }
// The profile's current revision: the exports follow the pinned releases, not earlier code.
bool current_release(const Config& c) { return c.framework == &framework_profile(c.framework->id); }
bool generic_stack(const Config& c) { return !uses(c, Framework::litgpt) && !uses(c, Framework::torchtune); }
bool no_model_parallel(const Config& c) { return c.tp == 1 && c.pp == 1 && c.cp == 1; }
using detail::mixed;  // autocast, or FSDP's MixedPrecision
bool lora(const Config& c) { return c.finetune.method != FinetuneMethod::full; }
bool qlora(const Config& c) { return c.finetune.method == FinetuneMethod::qlora; }
// Whole decoder layers checkpointed (or none): what every stack below but Megatron-LM can express.
bool whole_layers(const Config& c) {
    return c.checkpointing == Checkpointing::none || (c.checkpointing == Checkpointing::full && c.checkpoint_every == 1);
}
bool checkpointed(const Config& c) { return c.checkpointing == Checkpointing::full; }
// Knobs only some stacks have: an export of a stack without them would describe another run.
// (float8 training: no export converts the linears.)
bool stack_extras(const Config& c) {
    return c.activation_offload || c.optimizer_in_backward || c.longest_batch_first || c.fp8_recipe != Fp8Recipe::none;
}

std::string model_id(const Config& c) { return model_id(c.model); }

// Per precision: accelerate 1.15 utils/dataclasses.py PrecisionType; the torch dtypes of the weights and of the
// compute; transformers 5.18 TrainingArguments' flag; Megatron-LM core_v0.15.3 arguments.py; torchtune 0.6.1
// training/precision.py PRECISION_STR_TO_DTYPE; Lightning Fabric's precision names (LitGPT's --precision).
// nullptr: the stack has no such mode. *-base-mixed: the frozen base in 16-bit under autocast (PEFT's recipe).
struct PrecisionNames {
    Precision precision;
    const char *accelerate, *weights, *compute, *hf_flag, *megatron, *torchtune, *litgpt;
};
const PrecisionNames kPrecisions[] = {
    {Precision::fp32_true, "'no'", "torch.float32", "torch.float32", "", "", "fp32", "32-true"},
    {Precision::bf16_mixed, "bf16", "torch.float32", "torch.bfloat16", "bf16", "--bf16", nullptr, "bf16-mixed"},
    {Precision::fp16_mixed, "fp16", "torch.float32", "torch.float16", "fp16", "--fp16", nullptr, "16-mixed"},
    {Precision::bf16_true, "'no'", "torch.bfloat16", "torch.bfloat16", "", nullptr, "bf16", "bf16-true"},
    {Precision::fp16_true, "'no'", "torch.float16", "torch.float16", "", nullptr, nullptr, "16-true"},
    {Precision::bf16_base_mixed, "bf16", "torch.bfloat16", "torch.bfloat16", "bf16", nullptr, nullptr, nullptr},
    {Precision::fp16_base_mixed, "fp16", "torch.float16", "torch.float16", "fp16", nullptr, nullptr, nullptr},
};
const PrecisionNames& names(Precision p) {
    for (const PrecisionNames& row : kPrecisions)
        if (row.precision == p) return row;
    return kPrecisions[0];
}

// An optimizer as a stack names it; `impl` matters for AdamW only, `args` are Python keyword arguments.
struct OptimizerName {
    Optimizer optimizer;
    bool any_impl;
    OptimizerImpl impl;
    const char *name, *args;
};
// transformers 5.18 training_args.py OptimizerNames; SGD's momentum through optim_args (trainer_optimizer.py _get_sgd).
const OptimizerName kHfOptimizers[] = {
    {Optimizer::adamw, false, OptimizerImpl::foreach, "adamw_torch", ""},
    {Optimizer::adamw, false, OptimizerImpl::fused, "adamw_torch_fused", ""},
    {Optimizer::adamw_8bit, true, {}, "adamw_bnb_8bit", ""},
    {Optimizer::paged_adamw, true, {}, "paged_adamw_32bit", ""},
    {Optimizer::paged_adamw_8bit, true, {}, "paged_adamw_8bit", ""},
    {Optimizer::adafactor, true, {}, "adafactor", ""},
    {Optimizer::lion, true, {}, "lion_32bit", ""},
    {Optimizer::sgd, true, {}, "sgd", ""},
    {Optimizer::sgd_momentum, true, {}, "sgd", "momentum=0.9"},
};
// Classes of torch 2.13's torch.optim and bitsandbytes.optim (AdamW's CUDA default is foreach).
const OptimizerName kTorchOptimizers[] = {
    {Optimizer::adamw, false, OptimizerImpl::foreach, "torch.optim.AdamW", ""},
    {Optimizer::adamw, false, OptimizerImpl::fused, "torch.optim.AdamW", "fused=True"},
    {Optimizer::adamw, false, OptimizerImpl::single_tensor, "torch.optim.AdamW", "foreach=False"},
    {Optimizer::adamw_8bit, true, {}, "bitsandbytes.optim.AdamW8bit", ""},
    {Optimizer::paged_adamw, true, {}, "bitsandbytes.optim.PagedAdamW", ""},
    {Optimizer::paged_adamw_8bit, true, {}, "bitsandbytes.optim.PagedAdamW8bit", ""},
    {Optimizer::adafactor, true, {}, "torch.optim.Adafactor", ""},
    {Optimizer::lion, true, {}, "bitsandbytes.optim.Lion", ""},
    {Optimizer::sgd, true, {}, "torch.optim.SGD", ""},
    {Optimizer::sgd_momentum, true, {}, "torch.optim.SGD", "momentum=0.9"},
};
template <std::size_t N>
const OptimizerName* find_optimizer(const OptimizerName (&table)[N], const Config& c) {
    for (const OptimizerName& row : table)
        if (row.optimizer == c.optimizer && (row.any_impl || row.impl == c.optimizer_impl)) return &row;
    return nullptr;
}

// FSDP sharding by `zero` (0, 2, 3): accelerate 1.15 utils/constants.py FSDP_SHARDING_STRATEGY, the names of
// torch's ShardingStrategy.
const char* const kSharding[] = {"NO_SHARD", nullptr, "SHARD_GRAD_OP", "FULL_SHARD"};
std::string lowercase(std::string s) {
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// LoRA targets as a list of module names; "all-linear" alone stays PEFT's special value for a transformers model, and
// is spelled out when the output projection joins it or the model is a plain nn.Module: PEFT 0.21's "all-linear"
// leaves the output layer out of a PreTrainedModel only (tuners/tuners_utils.py _maybe_include_all_linear_layers).
std::string peft_targets(const Config& c, bool pretrained_model) {
    const std::vector<std::string>& t = c.finetune.targets;
    if (pretrained_model && t.size() == 1 && t[0] == "all-linear") return str("all-linear");
    std::vector<std::string> names;
    for (const std::string& name : t)
        if (name != "all-linear" && !has(names, name)) names.push_back(name);
    if (has(t, "all-linear"))
        for (const Linear& l : adapter_linears(c.model))
            if (!has(names, l.name)) names.push_back(l.name);
    return json(names).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Whether the LoRA targets include a module (all-linear: every projection of the layers).
bool targets(const Config& c, const std::string& module) {
    return has(c.finetune.targets, module) || (has(c.finetune.targets, "all-linear") && module != c.model.family->head);
}

}  // namespace

// Key names from DeepSpeed's configuration reference (deepspeed.ai/docs/config-json).
json deepspeed_config(const Config& c) {
    json ds = {{"train_micro_batch_size_per_gpu", c.micro_batch},
               {"gradient_accumulation_steps", c.grad_accum},
               {"train_batch_size", c.micro_batch * c.grad_accum * data_parallel(c) / c.cp},
               {"gradient_clipping", kGradientClipping},
               {"wall_clock_breakdown", false}};
    if (c.precision == Precision::bf16_mixed || c.precision == Precision::bf16_true) ds["bf16"] = {{"enabled", true}};
    if (c.precision == Precision::fp16_mixed || c.precision == Precision::fp16_true)
        ds["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};
    json zero = {{"stage", c.zero}, {"contiguous_gradients", true}, {"overlap_comm", false},
                 {"reduce_bucket_size", 5e8}};
    if (c.zero == 3) {
        zero["stage3_prefetch_bucket_size"] = 5e7;
        zero["stage3_param_persistence_threshold"] = 1e5;
    }
    if (c.offload != Offload::none) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    if (c.offload == Offload::optimizer_and_params) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
    ds["zero_optimization"] = zero;
    // AdamW: DeepSpeed's own, FusedAdam on the GPU or DeepSpeedCPUAdam on offloaded partitions (0.19.8
    // runtime/engine.py _configure_basic_optimizer), as the estimate steps it. Any other optimizer is the Trainer's,
    // handed over as a client optimizer: ZeRO takes one it has not tested only when allowed, and with offload steps it
    // on the CPU partitions only when not forced to its CPU Adam (engine.py _configure_optimizer raises, accelerate
    // 1.15's _prepare_deepspeed swaps in DeepSpeedCPUAdam).
    if (c.optimizer == Optimizer::adamw)
        ds["optimizer"] = {{"type", "AdamW"},
                           {"params", {{"lr", kLearningRate}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", kWeightDecay}}}};
    else {
        ds["zero_allow_untested_optimizer"] = true;
        if (c.offload != Offload::none) ds["zero_force_ds_cpu_optimizer"] = false;
    }
    if (c.checkpointing != Checkpointing::none)
        ds["activation_checkpointing"] = {{"partition_activations", false}, {"contiguous_memory_optimization", false}};
    return ds;
}

std::optional<std::string> deepspeed_file(const Config& c) {
    if (c.strategy != Strategy::deepspeed || !generic_stack(c) || stack_extras(c)) return {};
    return deepspeed_config(c).dump(2) + "\n";
}

// accelerate 1.15: commands/config/config_args.py ClusterConfig (top-level keys), commands/launch.py (the keys of
// fsdp_config and deepspeed_config are its FSDP and DeepSpeed arguments), as commands/config/cluster.py writes them.
std::optional<std::string> accelerate_config(const Config& c) {
    const bool fsdp2_no_shard = c.strategy == Strategy::fsdp && c.fsdp_version == 2 && c.zero == 0;  // FSDP 2 always shards
    if (!uses(c, Framework::hf) || c.strategy == Strategy::megatron || !no_model_parallel(c) || fsdp2_no_shard ||
        !whole_layers(c) || stack_extras(c))
        return {};
    const char* const distributed[] = {"'NO'", "MULTI_GPU", "DEEPSPEED", "FSDP", nullptr};  // by Strategy
    std::string y = "# accelerate launch --config_file accelerate_config.yaml train.py   (accelerate 1.15)\n";
    if (names(c.precision).weights != std::string("torch.float32"))
        y += std::string("# ") + to_string(c.precision) + ": train.py loads the model in " + names(c.precision).weights + "\n";
    if (checkpointed(c) && c.strategy != Strategy::fsdp) y += "# train.py calls model.gradient_checkpointing_enable()\n";
    y += "compute_environment: LOCAL_MACHINE\ndebug: false\n";
    y += std::string("distributed_type: ") + distributed[int(c.strategy)] + "\n";
    // DeepSpeed runs from ds_config.json (its optimizer and flags are in no accelerate key); the file's keys and
    // mixed_precision then must not be given here (utils/dataclasses.py DeepSpeedPlugin._deepspeed_config_checks).
    if (c.strategy == Strategy::deepspeed)
        y += std::string("deepspeed_config:\n  deepspeed_config_file: ds_config.json\n  zero3_init_flag: ") + lower(c.zero == 3) + "\n";
    if (c.strategy == Strategy::fsdp) {
        const bool v1 = c.fsdp_version == 1;
        y += std::string("fsdp_config:\n  fsdp_activation_checkpointing: ") + lower(checkpointed(c)) +
             "\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_cpu_ram_efficient_loading: true" +
             "\n  fsdp_offload_params: " + lower(c.offload == Offload::optimizer_and_params) +
             "\n  fsdp_reshard_after_forward: " + (v1 ? kSharding[c.zero] : lower(c.zero == 3)) + "\n";
        // FSDP 1's plugin reads the sharding from fsdp_sharding_strategy (utils/dataclasses.py), whatever
        // fsdp_reshard_after_forward (what `accelerate config` writes) says.
        if (v1) y += std::string("  fsdp_sharding_strategy: ") + kSharding[c.zero] + "\n";
        y += "  fsdp_state_dict_type: FULL_STATE_DICT\n";
        if (v1) y += "  fsdp_sync_module_states: true\n  fsdp_use_orig_params: true\n";
        y += "  fsdp_version: " + n(std::uint64_t(c.fsdp_version)) + "\n";
    }
    if (c.compile) y += "dynamo_config:\n  dynamo_backend: INDUCTOR\n";  // utils/dataclasses.py DynamoBackend
    y += "enable_cpu_affinity: false\ngpu_ids: all\nmachine_rank: 0\nmain_training_function: main\n";
    if (c.strategy != Strategy::deepspeed) y += std::string("mixed_precision: ") + names(c.precision).accelerate + "\n";
    y += "num_machines: 1\nnum_processes: " + n(c.gpus) +
         "\nrdzv_backend: static\nsame_network: true\nuse_cpu: false\n";
    return y;
}

// transformers 5.18 training_args.py (TrainingArguments, _process_fsdp_args), PEFT 0.21 LoraConfig,
// transformers' BitsAndBytesConfig.
std::optional<std::string> training_arguments(const Config& c) {
    const OptimizerName* optim = find_optimizer(kHfOptimizers, c);
    // Trainer installs PEFT's wrap policy under FSDP: LoRA adapters in units of their own.
    const bool wrap_ok = c.strategy != Strategy::fsdp || !lora(c) || c.fsdp_wrap == FsdpWrap::adapters_apart;
    const bool loss_ok = c.loss == Loss::full || c.loss == Loss::fused_linear;  // fused-linear: Liger's kernel
    if (!uses(c, Framework::hf) || c.strategy == Strategy::megatron || !no_model_parallel(c) || !whole_layers(c) ||
        stack_extras(c) || !optim || !wrap_ok || !loss_ok || c.lm_head_chunks ||
        (c.strategy == Strategy::fsdp && c.fsdp_version == 2 && c.zero == 0) ||
        (qlora(c) && c.finetune.backend != QuantBackend::bitsandbytes))
        return {};
    const PrecisionNames& p = names(c.precision);
    const std::optional<TrlConfigExport> trl = trl_config_export(c);
    const bool ppo = c.method == TrainingMethod::ppo;
    const std::string arguments = trl ? trl->name : std::string("TrainingArguments");
    std::string s = trl ? std::string("# TRL ") + (ppo ? "1.12 " : "1.16 ") + method_traits(c.method).trainer + ", transformers 5.18"
                        : std::string("# transformers 5.18 Trainer");
    s += lora(c) ? " with PEFT 0.21: " : ": ";
    // PPOTrainer builds its own Accelerator and never reads bf16=: mixed precision comes from the launcher.
    if (ppo) s += "accelerate launch" + (c.gpus > 1 ? " --num_processes " + n(c.gpus) : std::string()) +
                  (*p.hf_flag ? std::string(" --mixed_precision ") + p.hf_flag : std::string()) + " train.py\n";
    else s += c.gpus > 1 ? "torchrun --nproc_per_node " + n(c.gpus) + " train.py\n" : "python train.py\n";
    // accelerate 1.15's FSDP 1 plugin takes its sharding from this variable (default FULL_SHARD), not from the
    // reshard_after_forward that TrainingArguments passes it (utils/dataclasses.py FullyShardedDataParallelPlugin).
    const bool sharding_variable = c.strategy == Strategy::fsdp && c.fsdp_version == 1 && c.zero != 3;
    if (sharding_variable) s += "import os\n\n";
    s += "import torch\n";
    if (lora(c)) s += "from peft import LoraConfig\n";
    if (trl) s += std::string(qlora(c) ? "from transformers import BitsAndBytesConfig\n" : "") + "from " + trl->module + " import " + trl->name + "\n\n";
    else s += qlora(c) ? "from transformers import BitsAndBytesConfig, TrainingArguments\n\n" : "from transformers import TrainingArguments\n\n";
    if (qlora(c))
        s += std::string("bnb_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=") +
             py(c.finetune.double_quant) + ", bnb_4bit_compute_dtype=" + p.compute +
             (c.finetune.quantize_lm_head ? ", llm_int8_skip_modules=[])\n" : ")\n");
    s += std::string("model_kwargs = dict(dtype=") + p.weights + ", attn_implementation=" +
         (c.attention == Attention::flash ? "\"sdpa\"" : "\"eager\"") + (qlora(c) ? ", quantization_config=bnb_config)\n" : ")\n");
    const std::string id = model_id(c);
    s += "# model = AutoModelForCausalLM.from_pretrained(" + (id.empty() ? std::string("\"path/to/model\"") : str(id)) + ", **model_kwargs)\n";
    if (qlora(c)) s += "# model = prepare_model_for_kbit_training(model)\n";
    if (lora(c)) {
        s += "lora_config = LoraConfig(r=" + n(c.finetune.rank) + ", target_modules=" + peft_targets(c, true) +
             ", lora_dropout=" + num(c.finetune.dropout) + ", task_type=\"CAUSAL_LM\")\n";
        s += c.adapter_dtype == AdapterDtype::fp32 ? "# model = get_peft_model(model, lora_config)\n"
                                                   : "# model = get_peft_model(model, lora_config, autocast_adapter_dtype=False)\n";
    }
    std::vector<std::string> args = {"output_dir=\"out\"",
                                     "per_device_train_batch_size=" + n(c.micro_batch),
                                     "gradient_accumulation_steps=" + n(c.grad_accum),
                                     "learning_rate=" + num(kLearningRate),
                                     "weight_decay=" + num(kWeightDecay),
                                     "max_grad_norm=" + num(kGradientClipping)};
    if (*p.hf_flag && !ppo) args.push_back(std::string(p.hf_flag) + "=True");
    // TRL's configs checkpoint unless told otherwise (trl/trainer/base_config.py).
    if (checkpointed(c) && c.strategy != Strategy::fsdp) args.push_back("gradient_checkpointing=True");
    else if (trl && !ppo) args.push_back("gradient_checkpointing=False");
    args.push_back(std::string("optim=\"") + optim->name + "\"");
    if (*optim->args) args.push_back(std::string("optim_args=\"") + optim->args + "\"");
    if (c.compile) args.push_back("torch_compile=True");
    if (c.loss == Loss::fused_linear) args.push_back("use_liger_kernel=True");
    if (c.strategy == Strategy::deepspeed) args.push_back("deepspeed=\"ds_config.json\"");
    if (c.strategy == Strategy::fsdp) {
        const std::string reshard = c.fsdp_version == 1 ? str(lowercase(kSharding[c.zero])) : py(c.zero == 3);
        args.push_back("fsdp=True");
        args.push_back("fsdp_config={\"version\": " + n(std::uint64_t(c.fsdp_version)) + ", \"reshard_after_forward\": " + reshard +
                       ", \"cpu_offload\": " + py(c.offload == Offload::optimizer_and_params) +
                       ", \"activation_checkpointing\": " + py(checkpointed(c)) +
                       ", \"auto_wrap_policy\": \"TRANSFORMER_BASED_WRAP\", \"state_dict_type\": \"FULL_STATE_DICT\"}");
    }
    if (sharding_variable) s += std::string("os.environ[\"FSDP_SHARDING_STRATEGY\"] = \"") + kSharding[c.zero] + "\"  # read by accelerate's FSDP 1 plugin\n";
    if (trl) args.insert(args.end(), trl->args.begin(), trl->args.end());
    s += "training_args = " + arguments + "(\n";
    for (const std::string& a : args) s += "    " + a + ",\n";
    return s + ")\n";
}

// Plain PyTorch 2.13: torch.nn.parallel.DistributedDataParallel, torch.distributed.fsdp (FullyShardedDataParallel,
// fully_shard), torch.distributed.algorithms._checkpoint.checkpoint_wrapper.
std::optional<std::string> torchrun_script(const Config& c) {
    const bool fsdp = c.strategy == Strategy::fsdp, fsdp1 = fsdp && c.fsdp_version == 1, fsdp2 = fsdp && c.fsdp_version == 2;
    const OptimizerName* optimizer = find_optimizer(kTorchOptimizers, c);
    // (A supervised loop: TRL's trainers run their own, from training-arguments' config.)
    if ((!uses(c, Framework::hf) && !uses(c, Framework::torchtitan)) || (c.strategy != Strategy::ddp && !fsdp) || is_trl(c) ||
        !no_model_parallel(c) || c.checkpointing == Checkpointing::selective || c.checkpointing == Checkpointing::selective_op ||
        stack_extras(c) || !optimizer || c.loss != Loss::full || c.lm_head_chunks || qlora(c) || (lora(c) && fsdp) ||
        (fsdp && c.precision == Precision::fp16_mixed))  // FSDP's fp16 needs a sharded gradient scaler: left out
        return {};
    const PrecisionNames& p = names(c.precision);
    const bool autocast = !fsdp && mixed(c), scaler = autocast && p.compute == std::string("torch.float16");
    const char* reduce = c.framework->fsdp_reduce_fp32 ? "torch.float32" : p.compute;
    std::string s = "# torchrun --nproc_per_node " + n(c.gpus) + " train.py   (PyTorch 2.13)\nimport os\n\nimport torch\nimport torch.distributed as dist\n";
    if (checkpointed(c)) s += "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n";
    if (fsdp2 && c.zero == 0) s += "from torch.distributed.device_mesh import init_device_mesh\n";
    if (fsdp1) s += "from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel, MixedPrecision, ShardingStrategy\n"
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n";
    if (fsdp2) s += "from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard\n";
    if (!fsdp) s += "from torch.nn.parallel import DistributedDataParallel\n";
    if (std::string(optimizer->name).rfind("bitsandbytes", 0) == 0) s += "import bitsandbytes\n";
    if (lora(c)) s += "from peft import LoraConfig, get_peft_model\n";
    s += "\ndist.init_process_group(\"nccl\")\nlocal_rank = int(os.environ[\"LOCAL_RANK\"])\ntorch.cuda.set_device(local_rank)\n\n";
    s += std::string("model = build_model()") + (p.weights != std::string("torch.float32") ? ".to(" + std::string(p.weights) + ")" : "") +
         "  # your torch.nn.Module, its decoder layers in model.layers\n";
    if (fsdp1) s += "Block = type(model.layers[0])  # one FSDP unit per decoder layer\n";
    if (checkpointed(c))
        s += "for i, layer in enumerate(model.layers):\n" +
             std::string(c.checkpoint_every > 1 ? "    if (i + 1) % " + n(c.checkpoint_every) + " == 0:\n        " : "    ") +
             "model.layers[i] = checkpoint_wrapper(layer)\n";
    if (lora(c))
        s += "model = get_peft_model(model, LoraConfig(r=" + n(c.finetune.rank) + ", target_modules=" + peft_targets(c, false) +
             ", lora_dropout=" + num(c.finetune.dropout) + ")" + (c.adapter_dtype == AdapterDtype::base ? ", autocast_adapter_dtype=False" : "") + ")\n";
    if (!fsdp) s += "model = DistributedDataParallel(model.cuda(), device_ids=[local_rank])\n";
    const bool offload = c.offload == Offload::optimizer_and_params;
    if (fsdp1) {
        s += "model = FullyShardedDataParallel(\n    model,\n    auto_wrap_policy=ModuleWrapPolicy({Block}),\n"
             "    sharding_strategy=ShardingStrategy." + std::string(kSharding[c.zero]) + ",\n";
        if (mixed(c)) s += std::string("    mixed_precision=MixedPrecision(param_dtype=") + p.compute + ", reduce_dtype=" + reduce +
                           ", buffer_dtype=" + p.compute + "),\n";
        s += std::string("    cpu_offload=CPUOffload(offload_params=") + py(offload) + "),\n    device_id=local_rank,\n    use_orig_params=True,\n)\n";
    }
    if (fsdp2) {
        std::string kwargs = std::string(mixed(c) ? "mp_policy=mp_policy, " : "") +
                             (offload ? "offload_policy=CPUOffloadPolicy(), " : "") + "reshard_after_forward=" + py(c.zero == 3);
        if (c.zero == 0) {  // FSDP 2 always shards: NO_SHARD is a replicated mesh dimension (HSDP with shards of one)
            s += "mesh = init_device_mesh(\"cuda\", (" + n(c.gpus) + ", 1), mesh_dim_names=(\"replicate\", \"shard\"))\n";
            kwargs = "mesh=mesh, " + kwargs;
        }
        if (mixed(c)) s += std::string("mp_policy = MixedPrecisionPolicy(param_dtype=") + p.compute + ", reduce_dtype=" + reduce + ")\n";
        s += "for layer in model.layers:\n    fully_shard(layer, " + kwargs + ")\nfully_shard(model, " + kwargs + ")\n";
    }
    if (c.compile) s += "model = torch.compile(model)\n";
    s += std::string("optimizer = ") + optimizer->name + "(model.parameters(), lr=" + num(kLearningRate) + ", weight_decay=" +
         num(kWeightDecay) + (*optimizer->args ? std::string(", ") + optimizer->args : "") + ")\n";
    if (scaler) s += "scaler = torch.amp.GradScaler(\"cuda\")\n";
    s += "\nfor step, (inputs, labels) in enumerate(loader):  # your DataLoader: " + n(c.micro_batch) + " sequences of " +
         n(c.seq_len) + " tokens per GPU\n";
    std::string forward = "logits = model(inputs.cuda())\n";
    if (autocast) forward = std::string("with torch.autocast(\"cuda\", dtype=") + p.compute + "):\n        " + forward;
    const bool accumulate = c.grad_accum > 1;
    s += "    " + forward + "    loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.cuda().flatten())" +
         (accumulate ? " / " + n(c.grad_accum) : std::string()) + "\n";
    s += scaler ? "    scaler.scale(loss).backward()\n" : "    loss.backward()\n";
    const std::string indent = accumulate ? "        " : "    ";
    if (accumulate) s += "    if (step + 1) % " + n(c.grad_accum) + " == 0:\n";
    s += scaler ? indent + "scaler.step(optimizer)\n" + indent + "scaler.update()\n" : indent + "optimizer.step()\n";
    return s + indent + "optimizer.zero_grad(set_to_none=True)\n";
}

// LitGPT 0.5.13: litgpt/finetune/lora.py and full.py setup() (multi-GPU: lora.py shards with FSDP 2 through
// ModelParallelStrategy, full.py with FSDP 1's FSDPStrategy, both checkpointing every Block; one GPU checkpoints
// nothing; --quantize converts every Linear, lm_head too, and steps bitsandbytes' PagedAdamW), litgpt/args.py TrainArgs.
std::optional<std::string> litgpt_command(const Config& c) {
    const OptimizerName* optimizer = find_optimizer(kTorchOptimizers, c);
    const bool single = c.strategy == Strategy::single && c.checkpointing == Checkpointing::none;
    const bool sharded = c.strategy == Strategy::fsdp && c.zero == 3 && c.offload == Offload::none && whole_layers(c) &&
                         checkpointed(c) && c.fsdp_version == (lora(c) ? 2 : 1) && !qlora(c) && no_model_parallel(c);
    const bool quantized_ok = !qlora(c) || (c.finetune.backend == QuantBackend::bitsandbytes && c.finetune.quantize_lm_head &&
                                            c.optimizer == Optimizer::paged_adamw && !mixed(c));
    const char* precision = names(c.precision).litgpt;
    if (!uses(c, Framework::litgpt) || !current_release(c) || !(single || sharded) || !quantized_ok || !optimizer || !precision ||
        stack_extras(c) || c.compile || c.attention != Attention::flash || c.loss != Loss::chunked ||
        c.lm_head_chunks != lora(c) || (lora(c) && c.adapter_dtype != AdapterDtype::base))
        return {};
    const std::string id = model_id(c);
    std::string s = "# LitGPT 0.5.13\nlitgpt " + std::string(lora(c) ? "finetune_lora " : "finetune_full ") +
                    (id.empty() ? "checkpoints/your/model" : id) + " \\\n  --devices " + n(c.gpus) +
                    " \\\n  --precision " + precision;
    if (qlora(c)) s += std::string(" \\\n  --quantize ") + (c.finetune.double_quant ? "bnb.nf4-dq" : "bnb.nf4");
    if (lora(c)) {
        const Family& f = *c.model.family;
        const bool qkv = has(c.finetune.targets, "qkv");  // the fused projection: query, key and value
        s += " \\\n  --lora_r " + n(c.finetune.rank) + " --lora_dropout " + num(c.finetune.dropout) +
             " \\\n  --lora_query " + lower(qkv || targets(c, f.q)) + " --lora_key " + lower(qkv || targets(c, f.k)) +
             " --lora_value " + lower(qkv || targets(c, f.v)) + " --lora_projection " + lower(targets(c, f.o)) +
             " --lora_mlp " + lower(targets(c, f.up)) + " --lora_head " + lower(targets(c, f.head));
    }
    s += " \\\n  --train.micro_batch_size " + n(c.micro_batch) + " --train.global_batch_size " +
         n(c.micro_batch * c.grad_accum * c.gpus) + " --train.max_seq_length " + n(c.seq_len);
    // The optimizer: a torch.optim class by name, another by path, or {"class_path", "init_args"} with arguments.
    std::string name = optimizer->name;
    if (qlora(c)) name = "AdamW";  // any AdamW: lora.py then steps bnb.optim.PagedAdamW
    else if (name.rfind("torch.optim.", 0) == 0 && !*optimizer->args) name = name.substr(12);
    if (*optimizer->args && !qlora(c)) {
        const std::string a = optimizer->args, key = a.substr(0, a.find('='));
        const std::string value = a.substr(a.find('=') + 1);
        const json init = {{key, json::parse(value == "True" ? "true" : value == "False" ? "false" : value, nullptr, false)}};
        name = "'" + json{{"class_path", name}, {"init_args", init}}.dump() + "'";
    }
    return s + " \\\n  --optimizer " + name + "\n";
}

namespace {

// torchtune 0.6.1 configs by model (torchtune/_recipe_registry.py): the recipes' configs for full fine-tuning, LoRA
// and QLoRA, on one device and distributed; "" when torchtune has none.
struct TorchtuneModel {
    const char* ids;  // Hugging Face ids, '|'-separated, lowercase
    const char *full_single, *full, *lora_single, *lora, *qlora_single, *qlora;
};
const TorchtuneModel kTorchtuneModels[] = {
    {"meta-llama/llama-2-7b-hf|meta-llama/llama-2-7b-chat-hf", "llama2/7B_full_low_memory", "llama2/7B_full",
     "llama2/7B_lora_single_device", "llama2/7B_lora", "llama2/7B_qlora_single_device", "llama2/7B_qlora"},
    {"meta-llama/llama-2-13b-hf|meta-llama/llama-2-13b-chat-hf", "", "llama2/13B_full", "", "llama2/13B_lora",
     "llama2/13B_qlora_single_device", ""},
    {"meta-llama/llama-2-70b-hf|meta-llama/llama-2-70b-chat-hf", "", "", "", "llama2/70B_lora", "", "llama2/70B_qlora"},
    {"meta-llama/meta-llama-3-8b|meta-llama/meta-llama-3-8b-instruct", "llama3/8B_full_single_device", "llama3/8B_full",
     "llama3/8B_lora_single_device", "llama3/8B_lora", "llama3/8B_qlora_single_device", ""},
    {"meta-llama/meta-llama-3-70b|meta-llama/meta-llama-3-70b-instruct", "", "llama3/70B_full", "", "llama3/70B_lora", "", ""},
    {"meta-llama/llama-3.1-8b|meta-llama/llama-3.1-8b-instruct", "llama3_1/8B_full_single_device", "llama3_1/8B_full",
     "llama3_1/8B_lora_single_device", "llama3_1/8B_lora", "llama3_1/8B_qlora_single_device", ""},
    {"meta-llama/llama-3.1-70b|meta-llama/llama-3.1-70b-instruct", "", "llama3_1/70B_full", "", "llama3_1/70B_lora", "", ""},
    {"meta-llama/llama-3.1-405b|meta-llama/llama-3.1-405b-instruct", "", "", "", "", "", "llama3_1/405B_qlora"},
    {"meta-llama/llama-3.2-1b|meta-llama/llama-3.2-1b-instruct", "llama3_2/1B_full_single_device", "llama3_2/1B_full",
     "llama3_2/1B_lora_single_device", "llama3_2/1B_lora", "llama3_2/1B_qlora_single_device", ""},
    {"meta-llama/llama-3.2-3b|meta-llama/llama-3.2-3b-instruct", "llama3_2/3B_full_single_device", "llama3_2/3B_full",
     "llama3_2/3B_lora_single_device", "llama3_2/3B_lora", "llama3_2/3B_qlora_single_device", ""},
    {"meta-llama/llama-3.3-70b-instruct", "", "llama3_3/70B_full", "", "llama3_3/70B_lora", "", "llama3_3/70B_qlora"},
    {"mistralai/mistral-7b-v0.1|mistralai/mistral-7b-instruct-v0.1", "mistral/7B_full_low_memory", "mistral/7B_full",
     "mistral/7B_lora_single_device", "mistral/7B_lora", "mistral/7B_qlora_single_device", ""},
    {"google/gemma-2b|google/gemma-2b-it", "", "gemma/2B_full", "gemma/2B_lora_single_device", "gemma/2B_lora",
     "gemma/2B_qlora_single_device", ""},
    {"google/gemma-7b|google/gemma-7b-it", "", "gemma/7B_full", "gemma/7B_lora_single_device", "gemma/7B_lora",
     "gemma/7B_qlora_single_device", ""},
    {"microsoft/phi-3-mini-4k-instruct", "phi3/mini_full_low_memory", "phi3/mini_full", "phi3/mini_lora_single_device",
     "phi3/mini_lora", "phi3/mini_qlora_single_device", ""},
    {"qwen/qwen2.5-7b|qwen/qwen2.5-7b-instruct", "qwen2_5/7B_full_single_device", "qwen2_5/7B_full",
     "qwen2_5/7B_lora_single_device", "qwen2_5/7B_lora", "", ""},
    {"qwen/qwen2.5-3b|qwen/qwen2.5-3b-instruct", "qwen2_5/3B_full_single_device", "qwen2_5/3B_full",
     "qwen2_5/3B_lora_single_device", "qwen2_5/3B_lora", "", ""},
    {"qwen/qwen2.5-14b|qwen/qwen2.5-14b-instruct", "", "", "qwen2_5/14B_lora_single_device", "", "", ""},
    {"qwen/qwen2.5-72b|qwen/qwen2.5-72b-instruct", "", "", "", "qwen2_5/72B_lora", "", ""},
};

const TorchtuneModel* torchtune_model(const std::string& id) {
    const std::string key = lowercase(id);
    for (const TorchtuneModel& m : kTorchtuneModels) {
        const std::string ids = std::string("|") + m.ids + "|";
        if (!key.empty() && ids.find("|" + key + "|") != std::string::npos) return &m;
    }
    return nullptr;
}

}  // namespace

// torchtune 0.6.1: recipes/{full,lora}_finetune_{single_device,distributed}.py (the keys they read) and their
// configs (recipes/configs/*.yaml); overrides as torchtune/config/_utils.py _merge_yaml_and_cli_args takes them.
std::optional<std::string> torchtune_command(const Config& c) {
    const TorchtuneModel* m = torchtune_model(model_id(c));
    const bool distributed = c.strategy == Strategy::fsdp;
    const OptimizerName* optimizer = find_optimizer(kTorchOptimizers, c);
    const char* dtype = names(c.precision).torchtune;
    if (!uses(c, Framework::torchtune) || !current_release(c) || !m || !dtype || !whole_layers(c) || !optimizer ||
        c.fp8_recipe != Fp8Recipe::none ||
        (c.strategy != Strategy::single && !distributed) || !no_model_parallel(c) || c.longest_batch_first ||
        (distributed && (c.fsdp_version != 2 || c.zero == 0 || (lora(c) && c.fsdp_wrap != FsdpWrap::layers))) ||
        (c.activation_offload && !checkpointed(c)) || (c.optimizer_in_backward && (lora(c) || c.grad_accum > 1)) ||
        (qlora(c) && c.finetune.backend != QuantBackend::torchao) || c.attention != Attention::flash ||
        (c.loss != Loss::full && c.loss != Loss::chunked) || c.lm_head_chunks || (lora(c) && c.adapter_dtype != AdapterDtype::base))
        return {};
    // The recipes' optimizers, overridden in place: torch's AdamW and SGD take every key the configs give them (fused).
    const std::string path = optimizer->name;
    if (path != "torch.optim.AdamW" && path != "torch.optim.SGD") return {};
    const char* config = qlora(c) ? (distributed ? m->qlora : m->qlora_single)
                         : lora(c) ? (distributed ? m->lora : m->lora_single)
                                   : (distributed ? m->full : m->full_single);
    if (!*config) return {};
    const std::string recipe = std::string(lora(c) ? "lora" : "full") + "_finetune_" + (distributed ? "distributed" : "single_device");
    std::vector<std::string> o = {"batch_size=" + n(c.micro_batch), "gradient_accumulation_steps=" + n(c.grad_accum),
                                  "tokenizer.max_seq_len=" + n(c.seq_len), std::string("dtype=") + dtype};
    if (lora(c)) {
        std::string modules;
        for (const char* name : {"q_proj", "k_proj", "v_proj", "output_proj"})
            if (targets(c, name)) modules += (modules.empty() ? "" : ",") + std::string(name);
        const int mlp = int(targets(c, "w1")) + int(targets(c, "w2")) + int(targets(c, "w3"));
        const bool output = has(c.finetune.targets, "output");
        if (modules.empty() || mlp % 3 != 0 || (output && c.model.tied_embeddings)) return {};  // MLP: all three or none
        o.push_back("model.lora_rank=" + n(c.finetune.rank));
        o.push_back("model.lora_dropout=" + num(c.finetune.dropout));
        o.push_back("'model.lora_attn_modules=[" + modules + "]'");
        o.push_back(std::string("model.apply_lora_to_mlp=") + py(mlp == 3));
        if (!c.model.tied_embeddings) o.push_back(std::string("model.apply_lora_to_output=") + py(output));
    }
    o.push_back(std::string("enable_activation_checkpointing=") + py(checkpointed(c)));
    o.push_back(std::string("enable_activation_offloading=") + py(c.activation_offload));
    o.push_back(std::string("compile=") + py(c.compile));
    if (!lora(c)) o.push_back(std::string("optimizer_in_bwd=") + py(c.optimizer_in_backward));
    o.push_back("optimizer._component_=" + path);
    o.push_back(std::string("optimizer.fused=") + py(c.optimizer_impl == OptimizerImpl::fused && path == "torch.optim.AdamW"));
    if (*optimizer->args && std::string(optimizer->args).rfind("fused", 0) != 0) o.push_back(std::string("optimizer.") + optimizer->args);
    if (c.loss == Loss::chunked)
        o.push_back("loss._component_=torchtune.modules.loss.CEWithChunkedOutputLoss"),
            o.push_back("loss.num_output_chunks=" + n(c.loss_chunks));
    else
        o.push_back("loss._component_=torch.nn.CrossEntropyLoss");
    if (distributed) {
        o.push_back(std::string("fsdp_cpu_offload=") + py(c.offload == Offload::optimizer_and_params));
        o.push_back(std::string("fsdp_reshard_after_forward=") + py(c.zero == 3));
    }
    std::string s = "# torchtune 0.6.1\ntune run " + (distributed ? "--nproc_per_node " + n(c.gpus) + " " : std::string()) + recipe +
                    " --config " + config;
    for (const std::string& override_ : o) s += " \\\n  " + override_;
    return s + "\n";
}

// Megatron-LM core_v0.15.3: megatron/training/arguments.py (pretrain_gpt.py's flags). Models it builds: GPT-style
// decoders without the features tested below.
std::optional<std::string> megatron_command(const Config& c) {
    const Architecture& a = c.model;
    const std::string act = activation_cost(a.activation).name;
    const bool model_ok = !a.parallel_block && a.sliding_layers == 0 && a.attn_softcap == 0 && a.final_softcap == 0 &&
                          !a.attention_sinks && a.position != Position::alibi && !a.embedding_norm && !is_mla(a) &&
                          a.qk_norm == QkNorm::none && a.norms_per_layer == 2 && a.embed_dim == 0 && !a.scaled_logits &&
                          a.shared_experts == 0 && a.dense_layers == 0 && !a.router_bias && !a.expert_bias &&
                          a.activation_dropout == 0 && a.embedding_dropout == a.residual_dropout && a.norm_weight &&
                          (a.norm == Norm::rmsnorm || a.norm_bias) && a.position_offset == 0 && !a.lm_head_bias &&
                          a.attention_bias == a.mlp_bias && (a.mlp == Mlp::swiglu ? act == "silu" : a.mlp == Mlp::gelu && act.rfind("gelu", 0) == 0);
    const char* precision = names(c.precision).megatron;
    const std::uint64_t chunks = c.pp * c.pp_stages_per_rank;
    const bool schedule_ok = c.pp == 1 || c.pp_schedule == PipelineSchedule::one_f_one_b ||
                             (c.pp_schedule == PipelineSchedule::interleaved_1f1b && a.layers % chunks == 0);
    const char* optimizer = c.optimizer == Optimizer::adamw ? "adam --weight-decay " : c.optimizer == Optimizer::sgd ? "sgd --sgd-momentum 0.0 --weight-decay "
                            : c.optimizer == Optimizer::sgd_momentum ? "sgd --sgd-momentum 0.9 --weight-decay " : nullptr;
    if (c.strategy != Strategy::megatron || !generic_stack(c) || !model_ok || !precision || !schedule_ok || !optimizer ||
        lora(c) || c.checkpoint_every > 1 || stack_extras(c) || c.compile)
        return {};
    std::vector<std::string> f = {
        "--tensor-model-parallel-size " + n(c.tp), "--pipeline-model-parallel-size " + n(c.pp),
        "--context-parallel-size " + n(c.cp)};
    if (c.pp > 1 && c.pp_stages_per_rank > 1) f.push_back("--num-layers-per-virtual-pipeline-stage " + n(a.layers / chunks));
    if (c.sequence_parallel) f.push_back("--sequence-parallel");
    if (c.zero == 1) f.push_back("--use-distributed-optimizer");
    f.push_back("--micro-batch-size " + n(c.micro_batch) + " --global-batch-size " + n(c.micro_batch * c.grad_accum * data_parallel(c) / c.cp));
    f.push_back("--seq-length " + n(c.seq_len) + " --max-position-embeddings " + n(std::max(a.max_positions, c.seq_len)));
    f.push_back("--num-layers " + n(a.layers) + " --hidden-size " + n(a.hidden) + " --ffn-hidden-size " + n(a.ffn) +
                " --num-attention-heads " + n(a.heads));
    if (a.kv_heads != a.heads) f.push_back("--group-query-attention --num-query-groups " + n(a.kv_heads));
    if (a.head_dim && a.head_dim != a.hidden / a.heads) f.push_back("--kv-channels " + n(a.head_dim));
    if (is_moe(a)) f.push_back("--num-experts " + n(a.experts) + " --moe-router-topk " + n(a.experts_per_token) +
                               " --moe-ffn-hidden-size " + n(expert_ffn(a)));
    if (a.mlp == Mlp::swiglu) f.push_back("--swiglu");
    f.push_back(std::string("--normalization ") + (a.norm == Norm::rmsnorm ? "RMSNorm" : "LayerNorm"));
    f.push_back(std::string("--position-embedding-type ") +
                (a.position == Position::rope ? "rope" : a.position == Position::learned ? "learned_absolute" : "none"));
    if (!a.tied_embeddings) f.push_back("--untie-embeddings-and-output-weights");
    if (!a.attention_bias) f.push_back(a.qkv_bias ? "--disable-bias-linear --add-qkv-bias" : "--disable-bias-linear");
    f.push_back("--hidden-dropout " + num(a.residual_dropout) + " --attention-dropout " + num(a.attention_dropout));
    f.push_back(std::string("--attention-backend ") + (c.attention == Attention::flash ? "flash" : "unfused"));
    if (*precision) f.push_back(precision);
    if (c.checkpointing == Checkpointing::selective) f.push_back("--recompute-granularity selective");
    if (c.checkpointing == Checkpointing::full)
        f.push_back("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
    f.push_back(std::string("--optimizer ") + optimizer + num(kWeightDecay) + " --lr " + num(kLearningRate) +
                " --clip-grad " + num(kGradientClipping));
    std::string s = "# Megatron-LM core_v0.15.3, from its checkout; add your data and tokenizer flags (the estimate's vocabulary: " +
                    n(a.vocab) + ")\n"
                    "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node " + n(c.gpus) + " pretrain_gpt.py";  // as its examples
    for (const std::string& flag : f) s += " \\\n  " + flag;
    return s + "\n";
}

std::vector<Export> exports_for(const Config& c) {
    struct Format {
        const char *id, *title, *filename, *language;
        std::optional<std::string> (*make)(const Config&);
    };
    static const Format kFormats[] = {
        {"deepspeed", "DeepSpeed config", "ds_config.json", "json", deepspeed_file},
        {"accelerate", "accelerate config", "accelerate_config.yaml", "yaml", accelerate_config},
        {"training-arguments", "transformers TrainingArguments", "training_args.py", "python", training_arguments},
        {"torchrun", "torchrun script (PyTorch DDP / FSDP)", "train.py", "python", torchrun_script},
        {"litgpt", "LitGPT command", "litgpt.sh", "shell", litgpt_command},
        {"torchtune", "torchtune command", "torchtune.sh", "shell", torchtune_command},
        {"megatron", "Megatron-LM arguments", "megatron.sh", "shell", megatron_command},
    };
    std::vector<Export> out;
    for (const Format& f : kFormats)
        if (std::optional<std::string> text = f.make(c)) out.push_back({f.id, f.title, f.filename, f.language, *text});
    return out;
}

}  // namespace vramcalc
