#include "exports/export_readback.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "exports/text_readers.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------- shared meanings

// Reading a consumer's values without throwing: a key's value, or `fallback` when the key is absent or `o` is no object.
json get_or(const json& o, const std::string& key, json fallback = nullptr) {
    if (!o.is_object()) return fallback;
    const auto it = o.find(key);
    return it == o.end() ? fallback : *it;
}
std::string text(const json& o, const std::string& key, const std::string& fallback = "") {
    const json v = get_or(o, key);
    return v.is_string() ? v.get<std::string>() : fallback;
}
bool boolean(const json& o, const std::string& key, bool fallback) {
    const json v = get_or(o, key);
    return v.is_boolean() ? v.get<bool>() : fallback;
}
double number(const json& o, const std::string& key, double fallback) {
    const json v = get_or(o, key);
    return v.is_number() ? v.get<double>() : fallback;
}


std::string short_dtype(const std::string& torch_dtype) {
    if (torch_dtype == "torch.float32") return "fp32";
    if (torch_dtype == "torch.bfloat16") return "bf16";
    if (torch_dtype == "torch.float16") return "fp16";
    return "";
}

// The precision of weights stored in `weights` and computed in `compute` (autocast's or FSDP's param_dtype; "" none),
// in the configuration's names (README "precision").
std::string precision_of(const std::string& weights, const std::string& compute) {
    if (weights == "fp32") return compute.empty() || compute == "fp32" ? "32-true" : compute == "bf16" ? "bf16-mixed" : "16-mixed";
    if (weights == compute || compute.empty()) return weights == "bf16" ? (compute.empty() ? "bf16-true" : "bf16-base-mixed")
                                                                        : (compute.empty() ? "16-true" : "16-base-mixed");
    return "";
}

// The modules PEFT 0.21 adapts (tuners/tuners_utils.py): target_modules names match a module's last name component;
// "all-linear" takes every nn.Linear but, for a transformers PreTrainedModel, the output layer.
json peft_adapted(const Architecture& a, const json& target_modules, bool pretrained_model, Readback& r) {
    std::vector<std::string> modules;
    for (const Linear& l : adapter_linears(a)) modules.push_back(l.name);
    modules.push_back(a.family->head);
    std::set<std::string> out;
    if (target_modules == "all-linear") {
        out.insert(modules.begin(), modules.end());
        if (pretrained_model) out.erase(a.family->head);
    } else if (target_modules.is_array()) {
        for (const json& t : target_modules) {
            const std::string name = t.is_string() ? t.get<std::string>() : "";
            if (std::find(modules.begin(), modules.end(), name) == modules.end())
                r.errors.push_back("PEFT: target module \"" + name + "\" not found in the model");
            else out.insert(name);
        }
    } else {
        r.errors.push_back("PEFT: target_modules must be a list of names or \"all-linear\"");
    }
    return json(std::vector<std::string>(out.begin(), out.end()));
}

// A sorted list of module names.
json sorted(std::set<std::string> names) { return json(std::vector<std::string>(names.begin(), names.end())); }

const Export* named_file(const std::vector<Export>& all, const std::string& filename) {
    for (const Export& e : all)
        if (e.filename == filename) return &e;
    return nullptr;
}

// ---------------------------------------------------------------- DeepSpeed

bool enabled(const json& ds, const char* block) {
    return ds.contains(block) && ds[block].is_object() && get_or(ds[block], "enabled", false) == true;
}
bool offloaded(const json& zero, const char* key) {
    return zero.contains(key) && zero[key].is_object() && get_or(zero[key], "device", "none") == std::string("cpu");
}

// What DeepSpeed 0.19.8 steps: the file's "optimizer" (runtime/engine.py _configure_basic_optimizer: Adam/AdamW as its
// FusedAdam, DeepSpeedCPUAdam on offloaded partitions, torch's with "torch_adam"), else the client optimizer `client`
// ({"optimizer", "optimizer_impl"}, null when unknown), which accelerate 1.15 _prepare_deepspeed replaces with
// DeepSpeedCPUAdam (adamw_mode defaults to True) under ZeRO-Offload unless "zero_force_ds_cpu_optimizer" is false.
void deepspeed_optimizer(const json& ds, const json& client, Readback& r) {
    const json zero = get_or(ds, "zero_optimization", json::object());
    const bool offload = offloaded(zero, "offload_optimizer");
    if (ds.contains("optimizer")) {
        const json o = ds["optimizer"];
        const std::string type = text(o, "type");
        const json params = get_or(o, "params", json::object());
        const bool adamw = type == "AdamW" || (type == "Adam" && get_or(params, "adam_w_mode", true) == true);
        if (!adamw) {
            r.errors.push_back("DeepSpeed optimizer type \"" + type + "\" is not read");
            return;
        }
        r.keys["optimizer"] = "adamw";
        if (get_or(params, "torch_adam", false) == true && !offload)
            r.keys["optimizer_impl"] = get_or(params, "fused", false) == true ? "fused" : get_or(params, "foreach", true) == false ? "single-tensor" : "foreach";
        else
            r.keys["optimizer_impl"] = "fused";  // FusedAdam's multi-tensor kernel, or the CPU Adam
        return;
    }
    if (offload && get_or(ds, "zero_force_ds_cpu_optimizer", true) != false) {
        r.keys["optimizer"] = "adamw", r.keys["optimizer_impl"] = "fused";
        return;
    }
    if (client.is_object())
        for (const auto& item : client.items()) r.keys[item.key()] = item.value();
}

// The keys a DeepSpeed config fixes, as deepspeed.runtime.config.DeepSpeedConfig reads them.
void read_deepspeed_config(const json& ds, Readback& r) {
    const json zero = get_or(ds, "zero_optimization", json::object());
    const json mb = get_or(ds, "train_micro_batch_size_per_gpu", json()), ga = get_or(ds, "gradient_accumulation_steps", json()),
               batch = get_or(ds, "train_batch_size", json());
    if (!mb.is_number_unsigned() || !ga.is_number_unsigned() || !batch.is_number_unsigned() || mb == 0 || ga == 0) {
        r.errors.push_back("DeepSpeed: the batch keys must be positive integers");
        return;
    }
    // config.py _batch_assertion: train_batch_size = micro batch x accumulation x world size.
    const std::uint64_t per_rank = mb.get<std::uint64_t>() * ga.get<std::uint64_t>();
    if (batch.get<std::uint64_t>() % per_rank) r.errors.push_back("DeepSpeed: train_batch_size is not micro batch x accumulation x GPUs");
    r.keys["strategy"] = "deepspeed";
    r.keys["micro_batch"] = mb, r.keys["grad_accum"] = ga, r.keys["gpus"] = batch.get<std::uint64_t>() / per_rank;
    r.keys["zero"] = get_or(zero, "stage", 0);
    r.keys["offload"] = offloaded(zero, "offload_param") ? "optimizer+params" : offloaded(zero, "offload_optimizer") ? "optimizer" : "none";
    if (enabled(ds, "bf16") && enabled(ds, "fp16")) r.errors.push_back("DeepSpeed: bf16 and fp16 both enabled");
    // 16-bit weights and gradients with fp32 master partitions: the configuration's 16-bit mixed under DeepSpeed.
    r.keys["precision"] = enabled(ds, "bf16") ? "bf16-mixed" : enabled(ds, "fp16") ? "16-mixed" : "32-true";
}

json parse_deepspeed(const std::string& text, Readback& r) {
    const json ds = json::parse(text, nullptr, false);
    if (!ds.is_object()) r.errors.push_back("ds_config.json is not a JSON object");
    return ds.is_object() ? ds : json();
}

void deepspeed(const Export& e, Readback& r) {
    const json ds = parse_deepspeed(e.text, r);
    if (ds.is_null()) return;
    read_deepspeed_config(ds, r);
    deepspeed_optimizer(ds, json(), r);
}

// ---------------------------------------------------------------- Python helpers

// A literal's value (numbers, strings, booleans, None, lists, dicts with string keys); names stay {"name": ...}.
json value_of(const json& e) {
    if (!e.is_object()) return e;
    if (e.contains("list") || e.contains("tuple")) {
        json out = json::array();
        for (const json& item : e.contains("list") ? e["list"] : e["tuple"]) out.push_back(value_of(item));
        return out;
    }
    if (e.contains("dict")) {
        json out = json::object();
        for (const json& kv : e["dict"])
            if (kv[0].is_string()) out[kv[0].get<std::string>()] = value_of(kv[1]);
        return out;
    }
    if (!dotted_name(e).empty()) return {{"name", dotted_name(e)}};
    return e;
}

// `target = value` statements at the top level, by target name.
json top_assignments(const json& statements) {
    json out = json::object();
    for (const json& s : statements)
        if (s.contains("assign") && s["assign"].size() == 1 && s["assign"][0].contains("name"))
            out[s["assign"][0]["name"].get<std::string>()] = s["value"];
    return out;
}

// The launch command of a file's first comment line ("# torchrun --nproc_per_node 4 train.py", "# TRL ...: accelerate
// launch ... train.py"): where the number of processes is given.
std::vector<std::string> launch_words(const std::string& text) {
    const std::string first = text.substr(0, text.find('\n'));
    if (first.rfind("# ", 0) != 0) return {};
    const std::size_t colon = first.find(": ");
    const auto commands = shell_commands(first.substr(colon == std::string::npos ? 2 : colon + 2));
    return commands.empty() ? std::vector<std::string>{} : commands[0];
}
std::string flag_value(const std::vector<std::string>& words, const std::string& flag) {
    for (std::size_t i = 0; i + 1 < words.size(); ++i)
        if (words[i] == flag) return words[i + 1];
    return "";
}
std::uint64_t launch_processes(const std::vector<std::string>& words) {
    for (const char* flag : {"--nproc_per_node", "--num_processes"})
        if (const std::string v = flag_value(words, flag); !v.empty()) return std::strtoull(v.c_str(), nullptr, 10);
    return 1;
}

// ---------------------------------------------------------------- transformers' TrainingArguments, TRL's configs

// The config classes the Trainer and TRL's trainers take: the method each trains and gradient_checkpointing's default
// as the trainer applies it (transformers 5.18 TrainingArguments: False; TRL 1.16 trl/trainer/base_config.py: True;
// TRL 1.12's PPOConfig says True, which its PPOTrainer never applies: experimental/ppo/ppo_trainer.py).
struct ArgumentsClass {
    const char *name, *method;
    bool checkpointing_default;
};
const ArgumentsClass kArgumentsClasses[] = {
    {"TrainingArguments", "sft", false}, {"DPOConfig", "dpo", true},       {"KTOConfig", "kto", true},
    {"ORPOConfig", "orpo", true},        {"CPOConfig", "cpo", true},       {"GRPOConfig", "grpo", true},
    {"RLOOConfig", "rloo", true},        {"DistillationConfig", "distill", true}, {"PPOConfig", "ppo", false},
};

// transformers 5.18 training_args.py OptimizerNames as trainer_optimizer.py builds them: (optim, optimizer, impl).
struct HfOptim {
    const char *optim, *optimizer, *impl;  // impl: "" when the estimate has none for it
};
const HfOptim kHfOptims[] = {
    {"adamw_torch", "adamw", "foreach"},  // torch.optim.AdamW, whose CUDA default is foreach
    {"adamw_torch_fused", "adamw", "fused"},
    {"adamw_bnb_8bit", "adamw-8bit", ""},
    {"paged_adamw_32bit", "paged-adamw", ""},
    {"paged_adamw_8bit", "paged-adamw-8bit", ""},
    {"adafactor", "adafactor", ""},
    {"lion_32bit", "lion", ""},
    {"sgd", "sgd", ""},
};

json hf_optimizer(const json& kwargs, Readback& r) {
    const std::string optim = text(kwargs, "optim", "adamw_torch");
    for (const HfOptim& o : kHfOptims)
        if (optim == o.optim) {
            json out = {{"optimizer", o.optimizer}};
            if (*o.impl) out["optimizer_impl"] = o.impl;
            // trainer_optimizer.py _get_sgd: optim_args "momentum=..." reach torch.optim.SGD.
            const std::string args = text(kwargs, "optim_args");
            if (out["optimizer"] == "sgd" && args.rfind("momentum=", 0) == 0 && std::strtod(args.c_str() + 9, nullptr) > 0)
                out["optimizer"] = "sgd-momentum";
            return out;
        }
    r.errors.push_back("optim \"" + optim + "\" is not read");
    return json();
}

void trl_keys(const std::string& cls, const json& k, bool lora, Readback& r) {
    std::string method = kArgumentsClasses[0].method;
    for (const ArgumentsClass& a : kArgumentsClasses)
        if (cls == a.name) method = a.method;
    // DPOConfig loss_type ["ipo"]; CPOConfig loss_type "simpo" with cpo_alpha 0 (trl/experimental/cpo).
    const json loss = get_or(k, "loss_type", json());
    if (method == "dpo" && loss == json::array({"ipo"})) method = "ipo";
    if (method == "cpo") {
        if (loss != "simpo" || get_or(k, "cpo_alpha", 1.0) != 0.0) r.errors.push_back("CPOConfig: only SimPO (loss_type \"simpo\", cpo_alpha 0) is estimated");
        method = "simpo";
    }
    r.keys["method"] = method;
    // The reference: a second model, or the policy with its adapters off under PEFT (DPOTrainer, KTOTrainer and
    // GRPOTrainer build none when given a PeftModel); GRPO loads one only for beta != 0 (default 0.0), RLOO's default is 0.05.
    const std::string shared = lora ? "base-without-adapters" : "model";
    if (method == "dpo" || method == "ipo" || method == "kto")
        r.keys["reference"] = get_or(k, "precompute_ref_log_probs", false) == true ? "precomputed" : shared;
    if (method == "grpo" || method == "rloo")
        r.keys["reference"] = get_or(k, "beta", method == "grpo" ? 0.0 : 0.05) != 0.0 ? shared : "none";
    if (k.contains("max_length")) r.keys["seq_len"] = k["max_length"];
    if (k.contains("max_completion_length")) r.keys["completion_len"] = k["max_completion_length"];
    if (k.contains("response_length")) r.keys["completion_len"] = k["response_length"];
    for (const auto& [arg, key] : {std::pair<const char*, const char*>{"num_generations", "num_generations"},
                                   {"steps_per_generation", "steps_per_generation"}, {"num_iterations", "num_iterations"},
                                   {"num_mini_batches", "num_mini_batches"}, {"local_rollout_forward_batch_size", "rollout_forward_batch"}})
        if (k.contains(arg)) r.keys[key] = k[arg];
    if (get_or(k, "use_vllm", false) == true) {
        const std::string mode = text(k, "vllm_mode", "server");  // GRPOConfig's default
        r.keys["inference_engine.mode"] = mode;
        if (mode == "colocate") {
            r.keys["inference_engine.gpu_memory_utilization"] = get_or(k, "vllm_gpu_memory_utilization", 0.3);
            r.keys["inference_engine.sleep_mode"] = get_or(k, "vllm_enable_sleep_mode", false);
        }
    } else if (method == "grpo" || method == "rloo") {
        r.keys["inference_engine"] = "none";
    }
    if (method == "distill") {
        const json init = get_or(k, "teacher_model_init_kwargs", json::object());
        const std::string dtype = text(init, "dtype");
        r.keys["teacher_dtype"] = dtype == "float32" ? "fp32" : dtype == "float16" ? "fp16" : "bf16";
        const double beta = number(k, "beta", 1.0);  // DistillationConfig: 0 forward KL, 1 reverse KL, between JSD
        r.keys["divergence"] = beta == 1.0 ? "reverse-kl" : beta == 0.0 ? "forward-kl" : "jsd";
    }
}

void training_arguments(const Export& e, const std::vector<Export>& all, const Architecture& a, Readback& r) {
    std::string error;
    const json code = read_python(e.text, error);
    if (!error.empty()) return r.errors.push_back(error);
    const json vars = top_assignments(code);
    std::string cls;
    json k;
    for (const auto& item : vars.items())
        for (const ArgumentsClass& c : kArgumentsClasses)
            if (item.value().contains("call") && dotted_name(item.value()["call"]) == c.name) {
                if (!cls.empty()) return r.errors.push_back("more than one training-arguments object");
                cls = c.name, k = json::object();
                for (const auto& kw : item.value()["kwargs"].items()) k[kw.key()] = value_of(kw.value());
            }
    if (cls.empty()) return r.errors.push_back("no TrainingArguments or TRL config object");
    const std::vector<std::string> launch = launch_words(e.text);
    const bool ppo = cls == "PPOConfig";

    // The model: from_pretrained(**model_kwargs), quantized by a BitsAndBytesConfig (transformers 5.18 bnb 4-bit:
    // llm_int8_skip_modules None keeps the output layer unquantized, a list replaces that).
    json model = vars.contains("model_kwargs") && vars["model_kwargs"].contains("call") ? vars["model_kwargs"]["kwargs"] : json::object();
    const std::string weights = short_dtype(dotted_name(get_or(model, "dtype", json())));
    const std::string attention = text(model, "attn_implementation");
    if (weights.empty() || (attention != "sdpa" && attention != "eager")) r.errors.push_back("model_kwargs: dtype and attn_implementation");
    r.keys["attention"] = attention == "eager" ? "eager" : "flash";
    json bnb;
    if (model.contains("quantization_config")) {
        const std::string var = dotted_name(model["quantization_config"]);
        if (!vars.contains(var) || dotted_name(get_or(vars[var], "call", json())) != "BitsAndBytesConfig")
            return r.errors.push_back("quantization_config is not a BitsAndBytesConfig");
        bnb = json::object();
        for (const auto& kw : vars[var]["kwargs"].items()) bnb[kw.key()] = value_of(kw.value());
        if (get_or(bnb, "load_in_4bit", false) != true || get_or(bnb, "bnb_4bit_quant_type", "fp4") != "nf4")
            r.errors.push_back("BitsAndBytesConfig: QLoRA is NF4 4-bit");
    }
    const bool lora = vars.contains("lora_config");
    if (lora) {
        const json& call = vars["lora_config"];
        if (dotted_name(get_or(call, "call", json())) != "LoraConfig") return r.errors.push_back("lora_config is not a LoraConfig");
        const json kw = call["kwargs"];
        r.keys["finetune.method"] = bnb.is_null() ? "lora" : "qlora";
        r.keys["finetune.rank"] = value_of(get_or(kw, "r", json(8)));
        r.keys["finetune.dropout"] = value_of(get_or(kw, "lora_dropout", json(0.0)));
        r.keys["finetune.targets"] = peft_adapted(a, value_of(get_or(kw, "target_modules", json())), true, r);
        if (!bnb.is_null()) {
            r.keys["finetune.double_quant"] = get_or(bnb, "bnb_4bit_use_double_quant", false);
            r.keys["finetune.quantize_lm_head"] = bnb.contains("llm_int8_skip_modules") && bnb["llm_int8_skip_modules"].empty();
            r.keys["finetune.backend"] = "bitsandbytes";
        }
    } else {
        if (!bnb.is_null()) r.errors.push_back("a quantized model without LoRA cannot be trained");
        r.keys["finetune"] = "full";
    }

    // Mixed precision: the flag (PPOTrainer builds its own Accelerator and reads the launcher's --mixed_precision).
    const std::string mixed = ppo ? flag_value(launch, "--mixed_precision")
                                  : get_or(k, "bf16", false) == true ? "bf16" : get_or(k, "fp16", false) == true ? "fp16" : "";
    const std::string precision = precision_of(weights, mixed);
    if (precision.empty()) r.errors.push_back("weights in " + weights + " under " + mixed + " autocast");
    r.keys["precision"] = precision;
    r.keys["micro_batch"] = get_or(k, "per_device_train_batch_size", json(8));
    r.keys["grad_accum"] = get_or(k, "gradient_accumulation_steps", json(1));
    r.keys["gpus"] = launch_processes(launch);
    r.keys["compile"] = get_or(k, "torch_compile", false);
    r.keys["loss"] = get_or(k, "use_liger_kernel", false) == true ? "fused-linear" : "full";
    bool checkpointing = boolean(k, "gradient_checkpointing", false);
    for (const ArgumentsClass& c : kArgumentsClasses)
        if (cls == c.name && !k.contains("gradient_checkpointing")) checkpointing = c.checkpointing_default;
    const json optimizer = hf_optimizer(k, r);

    if (k.contains("deepspeed")) {
        const std::string file = k["deepspeed"].is_string() ? k["deepspeed"].get<std::string>() : "";
        const Export* ds_file = named_file(all, file);
        if (!ds_file) return r.errors.push_back("deepspeed=\"" + file + "\" is not among the exports");
        const json ds = parse_deepspeed(ds_file->text, r);
        if (ds.is_null()) return;
        read_deepspeed_config(ds, r);
        deepspeed_optimizer(ds, optimizer, r);
        // integrations/deepspeed.py trainer_config_process: the file's values must equal the arguments'.
        if (get_or(ds, "train_micro_batch_size_per_gpu", json()) != get_or(k, "per_device_train_batch_size", json(8)) ||
            get_or(ds, "gradient_accumulation_steps", json()) != get_or(k, "gradient_accumulation_steps", json(1)) ||
            enabled(ds, "bf16") != (mixed == "bf16") || enabled(ds, "fp16") != (mixed == "fp16"))
            r.errors.push_back("ds_config.json disagrees with the TrainingArguments (batch or precision)");
        r.keys["checkpointing"] = checkpointing ? "full" : "none";
    } else if (get_or(k, "fsdp", json(false)) != false) {
        // accelerate 1.15 FullyShardedDataParallelPlugin from TrainingArguments.fsdp_config: FSDP 1 takes its sharding
        // from FSDP_SHARDING_STRATEGY (default FULL_SHARD), FSDP 2 from reshard_after_forward.
        const json f = get_or(k, "fsdp_config", json::object());
        const int version = int(number(f, "version", 1));
        std::string sharding = "FULL_SHARD";
        for (const json& s : code)
            if (s.contains("assign") && s["assign"][0].contains("index") && dotted_name(s["assign"][0]["of"]) == "os.environ" &&
                s["assign"][0]["index"] == "FSDP_SHARDING_STRATEGY")
                sharding = s["value"].is_string() ? s["value"].get<std::string>() : "";
        r.keys["strategy"] = "fsdp", r.keys["fsdp_version"] = version;
        if (version == 1) r.keys["zero"] = sharding == "FULL_SHARD" ? 3 : sharding == "SHARD_GRAD_OP" ? 2 : sharding == "NO_SHARD" ? 0 : -1;
        else r.keys["zero"] = get_or(f, "reshard_after_forward", true) == true ? 3 : 2;
        r.keys["offload"] = get_or(f, "cpu_offload", false) == true ? "optimizer+params" : "none";
        const bool fsdp_checkpointing = boolean(f, "activation_checkpointing", false);
        if (fsdp_checkpointing && checkpointing && k.contains("gradient_checkpointing"))
            r.errors.push_back("activation_checkpointing and gradient_checkpointing both set");
        r.keys["checkpointing"] = fsdp_checkpointing || (checkpointing && k.contains("gradient_checkpointing")) ? "full" : "none";
        // Trainer installs PEFT's wrap policy for a PeftModel (adapters in units of their own).
        if (lora) r.keys["fsdp_wrap"] = "adapters-apart";
        if (optimizer.is_object()) r.keys.update(optimizer);
    } else {
        r.keys["strategy"] = r.keys["gpus"] == 1 ? "single" : "ddp";
        r.keys["checkpointing"] = checkpointing ? "full" : "none";
        if (optimizer.is_object()) r.keys.update(optimizer);
    }
    trl_keys(cls, k, lora, r);
}

// ---------------------------------------------------------------- accelerate's config file

void accelerate(const Export& e, const std::vector<Export>& all, Readback& r) {
    std::string error;
    const json y = read_yaml(e.text, error);
    if (!error.empty()) return r.errors.push_back(error);
    // accelerate 1.15 commands/config/config_args.py ClusterConfig and commands/launch.py.
    const std::string type = text(y, "distributed_type");
    const char* strategy = type == "NO" ? "single" : type == "MULTI_GPU" ? "ddp" : type == "DEEPSPEED" ? "deepspeed" : type == "FSDP" ? "fsdp" : "";
    if (!*strategy) return r.errors.push_back("distributed_type \"" + type + "\" is not read");
    r.keys["strategy"] = strategy;
    r.keys["gpus"] = get_or(y, "num_processes", json(1));
    const json dynamo = get_or(y, "dynamo_config", json::object());
    r.keys["compile"] = dynamo.is_object() && get_or(dynamo, "dynamo_backend", "NO") != std::string("NO");
    const json mp = get_or(y, "mixed_precision", json("no"));  // YAML 1.1: an unquoted no is False, which accelerate refuses
    if (!mp.is_string()) return r.errors.push_back("mixed_precision is not a string");
    // The weights' dtype is train.py's choice: each mode admits the precisions that differ by it.
    const std::string m = mp.get<std::string>();
    r.keys["precision"] = m == "bf16" ? json{{"one_of", {"bf16-mixed", "bf16-base-mixed"}}}
                          : m == "fp16" ? json{{"one_of", {"16-mixed", "16-base-mixed"}}}
                                        : json{{"one_of", {"32-true", "bf16-true", "16-true"}}};
    if (type == "DEEPSPEED") {
        const json d = get_or(y, "deepspeed_config", json::object());
        const std::string file = text(d, "deepspeed_config_file");
        const Export* ds_file = named_file(all, file);
        if (!ds_file) return r.errors.push_back("deepspeed_config_file \"" + file + "\" is not among the exports");
        if (!get_or(y, "mixed_precision").is_null()) r.errors.push_back("mixed_precision beside deepspeed_config_file");
        for (const char* ignored : {"gradient_accumulation_steps", "zero_stage", "offload_optimizer_device", "offload_param_device"})
            if (d.contains(ignored)) r.errors.push_back(std::string("deepspeed_config: ") + ignored + " beside deepspeed_config_file");
        const json ds = parse_deepspeed(ds_file->text, r);
        if (ds.is_null()) return;
        read_deepspeed_config(ds, r);
        deepspeed_optimizer(ds, json(), r);  // train.py's own optimizer otherwise: not in this file
        r.keys["gpus"] = get_or(y, "num_processes", json(1));
    }
    if (type == "FSDP") {
        const json f = get_or(y, "fsdp_config", json::object());
        const int version = int(number(f, "fsdp_version", 1));
        r.keys["fsdp_version"] = version;
        if (version == 1) {
            const std::string s = text(f, "fsdp_sharding_strategy", "FULL_SHARD");
            r.keys["zero"] = s == "FULL_SHARD" ? 3 : s == "SHARD_GRAD_OP" ? 2 : s == "NO_SHARD" ? 0 : -1;
        } else {
            r.keys["zero"] = get_or(f, "fsdp_reshard_after_forward", true) == true ? 3 : 2;
        }
        r.keys["offload"] = get_or(f, "fsdp_offload_params", false) == true ? "optimizer+params" : "none";
        r.keys["checkpointing"] = get_or(f, "fsdp_activation_checkpointing", false) == true ? "full" : "none";
    }
}

// ---------------------------------------------------------------- the torchrun script

// One statement list's checkpoint_wrapper loop: every layer, or every N-th (`if (i + 1) % N == 0:`).
json checkpointing_of(const json& code) {
    for (const json& s : code) {
        if (!s.contains("for")) continue;
        json body = s["body"];
        std::uint64_t every = 1;
        if (body.size() == 1 && body[0].contains("if")) {
            const json cond = body[0]["if"];  // ((i + 1) % N) == 0
            if (text(cond, "op") == "==" && get_or(cond, "r") == 0 && text(get_or(cond, "l"), "op") == "%" &&
                get_or(get_or(cond, "l"), "r").is_number_unsigned())
                every = get_or(get_or(cond, "l"), "r").get<std::uint64_t>();
            body = body[0]["body"];
        }
        if (!python_calls(body, "checkpoint_wrapper").empty())
            return every > 1 ? json{{"mode", "layers"}, {"every", every}} : json("full");
    }
    return "none";
}

// torch 2.13: torch.optim.AdamW's foreach default on CUDA, fused=True, foreach=False.
const std::pair<const char*, const char*> kTorchOptimizers[] = {
    {"torch.optim.AdamW", "adamw"},         {"torch.optim.SGD", "sgd"},
    {"torch.optim.Adafactor", "adafactor"}, {"bitsandbytes.optim.AdamW8bit", "adamw-8bit"},
    {"bitsandbytes.optim.PagedAdamW", "paged-adamw"}, {"bitsandbytes.optim.PagedAdamW8bit", "paged-adamw-8bit"},
    {"bitsandbytes.optim.Lion", "lion"},
};

void torchrun(const Export& e, const Architecture& a, Readback& r) {
    std::string error;
    const json code = read_python(e.text, error);
    if (!error.empty()) return r.errors.push_back(error);
    r.keys["gpus"] = launch_processes(launch_words(e.text));
    const auto fsdp1 = python_calls(code, "FullyShardedDataParallel"), fsdp2 = python_calls(code, "fully_shard"),
               ddp = python_calls(code, "DistributedDataParallel");
    if (int(!fsdp1.empty()) + int(!fsdp2.empty()) + int(!ddp.empty()) != 1) return r.errors.push_back("not one of DDP, FSDP 1, FSDP 2");
    const json vars = top_assignments(code);

    // The weights' dtype: model = build_model().to(dtype); the compute dtype: autocast, or FSDP's mixed precision.
    std::string weights = "fp32", compute;
    for (const json& s : code)
        if (s.contains("assign") && s["assign"][0] == json{{"name", "model"}} && s["value"].contains("call") &&
            get_or(s["value"]["call"], "attr", "") == "to" && !s["value"]["args"].empty())
            weights = short_dtype(dotted_name(s["value"]["args"][0]));
    for (const json& w : python_calls(code, "torch.autocast")) compute = short_dtype(dotted_name(get_or(w["kwargs"], "dtype", json())));
    for (const char* policy : {"MixedPrecision", "MixedPrecisionPolicy"})
        for (const json& p : python_calls(code, policy)) compute = short_dtype(dotted_name(get_or(p["kwargs"], "param_dtype", json())));
    const std::string precision = precision_of(weights, compute);
    if (precision.empty()) r.errors.push_back("weights in " + weights + " computed in " + compute);
    r.keys["precision"] = precision;

    if (!ddp.empty()) r.keys["strategy"] = r.keys["gpus"] == 1 ? "single" : "ddp";
    if (!fsdp1.empty()) {
        const json kw = fsdp1[0]["kwargs"];
        const std::string s = dotted_name(get_or(kw, "sharding_strategy", json()));  // torch's default: FULL_SHARD
        r.keys["strategy"] = "fsdp", r.keys["fsdp_version"] = 1;
        r.keys["zero"] = s.empty() || s == "ShardingStrategy.FULL_SHARD" ? 3 : s == "ShardingStrategy.SHARD_GRAD_OP" ? 2
                                                                          : s == "ShardingStrategy.NO_SHARD" ? 0 : -1;
        const json off = get_or(kw, "cpu_offload", json());
        r.keys["offload"] = off.is_object() && off.contains("call") && get_or(off["kwargs"], "offload_params", false) == true ? "optimizer+params" : "none";
    }
    if (!fsdp2.empty()) {
        // Every call shards alike: the layers, then the root.
        json kw = fsdp2[0]["kwargs"];
        for (const json& call : fsdp2)
            if (call["kwargs"] != kw) r.errors.push_back("fully_shard calls differ");
        r.keys["strategy"] = "fsdp", r.keys["fsdp_version"] = 2;
        const bool replicated = kw.contains("mesh");  // (N, 1): a replicate dimension and shards of one (HSDP)
        if (replicated) {
            const json mesh = get_or(vars, dotted_name(kw["mesh"]), json());
            const json shape = mesh.is_object() && mesh.contains("call") && mesh["args"].size() > 1 ? value_of(mesh["args"][1]) : json();
            if (!shape.is_array() || shape.size() != 2 || shape[1] != 1) r.errors.push_back("the device mesh is not (GPUs, 1)");
        }
        r.keys["zero"] = replicated ? 0 : value_of(get_or(kw, "reshard_after_forward", json(true))) == true ? 3 : 2;
        r.keys["offload"] = kw.contains("offload_policy") ? "optimizer+params" : "none";
        if (vars.contains("mp_policy") && get_or(kw, "mp_policy", json()) != json{{"name", "mp_policy"}}) r.errors.push_back("mp_policy unused");
    }
    r.keys["checkpointing"] = checkpointing_of(code);
    r.keys["compile"] = !python_calls(code, "torch.compile").empty();

    const auto peft = python_calls(code, "get_peft_model");
    if (!peft.empty()) {
        const json cfg = peft[0]["args"].size() > 1 ? peft[0]["args"][1] : json();
        if (dotted_name(get_or(cfg, "call", json())) != "LoraConfig") return r.errors.push_back("get_peft_model without a LoraConfig");
        const json kw = cfg["kwargs"];
        r.keys["finetune.method"] = "lora";
        r.keys["finetune.rank"] = value_of(get_or(kw, "r", json(8)));
        r.keys["finetune.dropout"] = value_of(get_or(kw, "lora_dropout", json(0.0)));
        r.keys["finetune.targets"] = peft_adapted(a, value_of(get_or(kw, "target_modules", json())), false, r);
        // PEFT casts the adapters to fp32 unless autocast_adapter_dtype=False (tuners_utils.py _cast_adapter_dtype).
        r.keys["adapter_dtype"] = get_or(peft[0]["kwargs"], "autocast_adapter_dtype", true) == false ? "base" : "fp32";
    } else {
        r.keys["finetune"] = "full";
    }

    bool found = false;
    for (const auto& [path, name] : kTorchOptimizers)
        for (const json& o : python_calls(code, path)) {
            found = true;
            const json kw = o["kwargs"];
            r.keys["optimizer"] = name;
            if (std::string(name) == "sgd" && value_of(get_or(kw, "momentum", json(0))) != 0) r.keys["optimizer"] = "sgd-momentum";
            if (std::string(name) == "adamw")
                r.keys["optimizer_impl"] = get_or(kw, "fused", false) == true ? "fused" : get_or(kw, "foreach", json()) == false ? "single-tensor" : "foreach";
        }
    if (!found) r.errors.push_back("no optimizer");

    // Accumulation: optimizer.step() under `if (step + 1) % N == 0:` in the training loop.
    std::uint64_t accumulation = 1;
    for (const json& s : code)
        if (s.contains("for"))
            for (const json& inner : s["body"])
                if (inner.contains("if") && !python_calls(inner["body"], "optimizer.step").empty() + !python_calls(inner["body"], "scaler.step").empty()) {
                    const json cond = inner["if"];
                    if (text(cond, "op") == "==" && text(get_or(cond, "l"), "op") == "%" && get_or(get_or(cond, "l"), "r").is_number_unsigned())
                        accumulation = get_or(get_or(cond, "l"), "r").get<std::uint64_t>();
                }
    r.keys["grad_accum"] = accumulation;
}

// ---------------------------------------------------------------- command lines

// `--flag value` and bare `--flag` words after the program (argparse's and jsonargparse's spellings).
std::vector<std::pair<std::string, std::string>> flags(const std::vector<std::string>& words, std::size_t from) {
    std::vector<std::pair<std::string, std::string>> out;
    for (std::size_t i = from; i < words.size(); ++i)
        if (words[i].rfind("--", 0) == 0) {
            const bool valued = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
            out.push_back({words[i], valued ? words[i + 1] : ""});
            i += valued;
        }
    return out;
}
std::uint64_t integer(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

// LitGPT 0.5.13: finetune/lora.py and full.py (multi-GPU: FSDP with every Block checkpointed, lora.py's FSDP 2 and
// full.py's FSDP 1; one GPU checkpoints nothing; --quantize steps bitsandbytes' PagedAdamW), args.py TrainArgs.
void litgpt(const Export& e, const Architecture& a, Readback& r) {
    const auto commands = shell_commands(e.text);
    if (commands.size() != 1 || commands[0].size() < 3 || commands[0][0] != "litgpt") return r.errors.push_back("not one litgpt command");
    const std::vector<std::string>& w = commands[0];
    const bool lora = w[1] == "finetune_lora";
    if (!lora && w[1] != "finetune_full") return r.errors.push_back("litgpt " + w[1] + " is not read");
    std::map<std::string, std::string> f;
    for (const auto& [flag, value] : flags(w, 3)) f[flag] = value;
    const std::uint64_t devices = f.count("--devices") ? integer(f["--devices"]) : 1;
    r.keys["gpus"] = devices;
    r.keys["strategy"] = devices > 1 ? "fsdp" : "single";
    if (devices > 1) r.keys["zero"] = 3, r.keys["fsdp_version"] = lora ? 2 : 1, r.keys["offload"] = "none";
    r.keys["checkpointing"] = devices > 1 ? "full" : "none";
    r.keys["precision"] = f.count("--precision") ? f["--precision"] : "";
    const std::string quantize = f.count("--quantize") ? f["--quantize"] : "";
    if (!quantize.empty() && quantize != "bnb.nf4" && quantize != "bnb.nf4-dq") r.errors.push_back("--quantize " + quantize + " is not read");
    if (lora) {
        r.keys["finetune.method"] = quantize.empty() ? "lora" : "qlora";
        r.keys["finetune.rank"] = integer(f.count("--lora_r") ? f["--lora_r"] : "8");
        r.keys["finetune.dropout"] = std::strtod(f.count("--lora_dropout") ? f["--lora_dropout"].c_str() : "0", nullptr);
        const Family& fam = *a.family;
        std::set<std::string> adapted;
        auto on = [&](const char* flag) { return f.count(flag) && f[flag] == "true"; };
        if (on("--lora_query")) adapted.insert(fam.q);
        if (on("--lora_key")) adapted.insert(fam.k);
        if (on("--lora_value")) adapted.insert(fam.v);
        if (on("--lora_projection")) adapted.insert(fam.o);
        if (on("--lora_mlp"))
            for (const Linear& l : mlp_linears(a)) adapted.insert(l.name);
        if (on("--lora_head")) adapted.insert(fam.head);
        r.keys["finetune.targets"] = sorted(adapted);
        if (!quantize.empty()) {
            r.keys["finetune.double_quant"] = quantize == "bnb.nf4-dq";
            r.keys["finetune.quantize_lm_head"] = true;  // every Linear, lm_head too
            r.keys["finetune.backend"] = "bitsandbytes";
        }
    } else {
        r.keys["finetune"] = "full";
    }
    const std::uint64_t mb = integer(f["--train.micro_batch_size"]), global = integer(f["--train.global_batch_size"]);
    if (mb == 0 || global % (mb * devices)) return r.errors.push_back("the global batch is not micro batch x devices x accumulation");
    r.keys["micro_batch"] = mb, r.keys["grad_accum"] = global / (mb * devices);
    r.keys["seq_len"] = integer(f["--train.max_seq_length"]);
    // --optimizer: a torch.optim class by name or path, or {"class_path", "init_args"}.
    std::string optimizer = f["--optimizer"];
    json init = json::object();
    if (!optimizer.empty() && optimizer[0] == '{') {
        const json o = json::parse(optimizer, nullptr, false);
        optimizer = text(o, "class_path");
        init = o.is_object() ? get_or(o, "init_args", json::object()) : json::object();
    }
    if (optimizer.find('.') == std::string::npos) optimizer = "torch.optim." + optimizer;  // a torch.optim class by name
    const char* name = nullptr;
    for (const auto& [path, id] : kTorchOptimizers)
        if (optimizer == path) name = id;
    if (!quantize.empty() && optimizer == "torch.optim.AdamW") name = "paged-adamw";
    if (name) r.keys["optimizer"] = name;
    if (name && std::string(name) == "adamw")
        r.keys["optimizer_impl"] = boolean(init, "fused", false) ? "fused" : !boolean(init, "foreach", true) ? "single-tensor" : "foreach";
    if (name && std::string(name) == "sgd" && number(init, "momentum", 0) > 0) r.keys["optimizer"] = "sgd-momentum";
    if (!name) r.errors.push_back("--optimizer " + optimizer + " is not read");
}

// torchtune 0.6.1: the recipe's name, its config's overrides (OmegaConf dotlist, _merge_yaml_and_cli_args).
void torchtune(const Export& e, const Architecture& a, Readback& r) {
    const auto commands = shell_commands(e.text);
    if (commands.size() != 1 || commands[0].size() < 5 || commands[0][0] != "tune" || commands[0][1] != "run")
        return r.errors.push_back("not one tune run command");
    const std::vector<std::string>& w = commands[0];
    std::size_t i = 2;
    std::uint64_t gpus = 1;
    if (w[i] == "--nproc_per_node") gpus = integer(w[i + 1]), i += 2;
    const std::string recipe = w[i], config = i + 2 < w.size() && w[i + 1] == "--config" ? w[i + 2] : "";
    const bool lora = recipe.rfind("lora_", 0) == 0, distributed = recipe.find("_distributed") != std::string::npos;
    if (config.empty() || (!lora && recipe.rfind("full_", 0) != 0)) return r.errors.push_back("recipe " + recipe + " is not read");
    std::map<std::string, json> o;
    for (std::size_t k = i + 3; k < w.size(); ++k) {
        const std::size_t eq = w[k].find('=');
        if (eq == std::string::npos) return r.errors.push_back("override " + w[k] + " is not key=value");
        o[w[k].substr(0, eq)] = yaml_scalar(w[k].substr(eq + 1));
    }
    auto get = [&](const std::string& key, json fallback) { return o.count(key) ? o[key] : fallback; };
    r.keys["gpus"] = gpus;
    r.keys["strategy"] = distributed ? "fsdp" : "single";
    if (distributed) {  // FSDP 2 (training/_distributed.py shard_model: fully_shard per layer)
        r.keys["fsdp_version"] = 2;
        r.keys["zero"] = get("fsdp_reshard_after_forward", true) == true ? 3 : 2;
        r.keys["offload"] = get("fsdp_cpu_offload", false) == true ? "optimizer+params" : "none";
    }
    r.keys["micro_batch"] = get("batch_size", nullptr), r.keys["grad_accum"] = get("gradient_accumulation_steps", nullptr);
    r.keys["seq_len"] = get("tokenizer.max_seq_len", nullptr);
    const json dtype = get("dtype", nullptr);  // training/precision.py: bf16 or fp32 parameters, no autocast
    r.keys["precision"] = dtype == "bf16" ? "bf16-true" : dtype == "fp32" ? "32-true" : "";
    r.keys["checkpointing"] = get("enable_activation_checkpointing", false) == true ? "full" : "none";
    r.keys["activation_offload"] = get("enable_activation_offloading", false);
    r.keys["compile"] = get("compile", false);
    if (!lora) r.keys["optimizer_in_backward"] = get("optimizer_in_bwd", false);
    const json component = get("optimizer._component_", nullptr);
    if (component == "torch.optim.AdamW") {
        r.keys["optimizer"] = "adamw", r.keys["optimizer_impl"] = get("optimizer.fused", false) == true ? "fused" : "foreach";
    } else if (component == "torch.optim.SGD") {
        r.keys["optimizer"] = get("optimizer.momentum", 0) != 0 ? "sgd-momentum" : "sgd";
    } else {
        r.errors.push_back("optimizer._component_ is not read");
    }
    const json loss = get("loss._component_", nullptr);
    if (loss == "torchtune.modules.loss.CEWithChunkedOutputLoss") r.keys["loss"] = "chunked", r.keys["loss_chunks"] = get("loss.num_output_chunks", 8);
    else if (loss == "torch.nn.CrossEntropyLoss") r.keys["loss"] = "full";
    else r.errors.push_back("loss._component_ is not read");
    if (lora) {
        // The qlora_* model builders quantize the base to NF4 (torchao) beside the adapters, which stay in the base dtype.
        r.keys["finetune.method"] = config.find("qlora") != std::string::npos ? "qlora" : "lora";
        if (r.keys["finetune.method"] == "qlora") r.keys["finetune.backend"] = "torchao";
        r.keys["adapter_dtype"] = "base";
        r.keys["finetune.rank"] = get("model.lora_rank", nullptr);
        r.keys["finetune.dropout"] = get("model.lora_dropout", nullptr);
        std::set<std::string> adapted;
        const json attn = get("model.lora_attn_modules", json::array());
        for (const json& m : attn) adapted.insert(m.is_string() ? m.get<std::string>() : "");
        if (get("model.apply_lora_to_mlp", false) == true)
            for (const Linear& l : mlp_linears(a)) adapted.insert(l.name);
        if (get("model.apply_lora_to_output", false) == true) adapted.insert(a.family->head);
        r.keys["finetune.targets"] = sorted(adapted);
    } else {
        r.keys["finetune"] = "full";
    }
}

// Megatron-LM core_v0.15.3 megatron/training/arguments.py: pretrain_gpt.py's flags; data parallel = GPUs / (tp pp cp).
void megatron(const Export& e, const Architecture& a, Readback& r) {
    const auto commands = shell_commands(e.text);
    if (commands.size() != 1) return r.errors.push_back("not one command");
    const std::vector<std::string>& w = commands[0];
    const auto script = std::find(w.begin(), w.end(), "pretrain_gpt.py");
    const auto launcher = std::find(w.begin(), w.end(), "torchrun");
    if (script == w.end() || launcher == w.end()) return r.errors.push_back("no torchrun ... pretrain_gpt.py");
    std::map<std::string, std::string> f;
    for (const auto& [flag, value] : flags(w, std::size_t(script - w.begin()) + 1)) {
        if (f.count(flag)) r.errors.push_back(flag + " given twice");
        f[flag] = value;
    }
    const std::uint64_t gpus = integer(flag_value(std::vector<std::string>(launcher, script), "--nproc_per_node"));
    auto num = [&](const char* flag, std::uint64_t fallback) { return f.count(flag) ? integer(f[flag]) : fallback; };
    const std::uint64_t tp = num("--tensor-model-parallel-size", 1), pp = num("--pipeline-model-parallel-size", 1),
                        cp = num("--context-parallel-size", 1), mb = num("--micro-batch-size", 1);
    if (tp * pp * cp == 0 || gpus % (tp * pp * cp)) return r.errors.push_back("GPUs are not a multiple of tp x pp x cp");
    const std::uint64_t dp = gpus / (tp * pp * cp), global = num("--global-batch-size", mb * dp);
    if (global % (mb * dp)) r.errors.push_back("the global batch is not micro batch x data parallel x micro-batches");
    r.keys["strategy"] = "megatron", r.keys["gpus"] = gpus;
    r.keys["tp"] = tp, r.keys["pp"] = pp, r.keys["cp"] = cp;
    r.keys["sequence_parallel"] = f.count("--sequence-parallel") == 1;
    r.keys["zero"] = f.count("--use-distributed-optimizer") ? 1 : 0;
    r.keys["micro_batch"] = mb, r.keys["grad_accum"] = global / (mb * dp);
    r.keys["seq_len"] = num("--seq-length", 0);
    r.keys["precision"] = f.count("--bf16") ? "bf16-mixed" : f.count("--fp16") ? "16-mixed" : "32-true";
    const std::string granularity = f.count("--recompute-granularity") ? f["--recompute-granularity"] : "";
    if (granularity == "full" && (f["--recompute-method"] != "uniform" || num("--recompute-num-layers", 0) != 1))
        r.errors.push_back("full recomputation other than every layer is not read");
    r.keys["checkpointing"] = granularity.empty() ? "none" : granularity;
    if (pp > 1) {
        const std::uint64_t per_stage = num("--num-layers-per-virtual-pipeline-stage", 0);
        r.keys["pp_schedule"] = per_stage ? "interleaved-1f1b" : "1f1b";
        r.keys["pp_stages_per_rank"] = per_stage ? a.layers / (pp * per_stage) : 1;
    }
    r.keys["attention"] = f["--attention-backend"] == "flash" ? "flash" : "eager";
    const std::string optimizer = f["--optimizer"];
    // optimizer/__init__.py: "adam" is TE's or apex's FusedAdam with decoupled weight decay; "sgd" torch's SGD.
    if (optimizer == "adam") r.keys["optimizer"] = "adamw", r.keys["optimizer_impl"] = "fused";
    else if (optimizer == "sgd") r.keys["optimizer"] = std::strtod(f["--sgd-momentum"].c_str(), nullptr) > 0 ? "sgd-momentum" : "sgd";
    else r.errors.push_back("--optimizer " + optimizer + " is not read");
    r.keys["finetune"] = "full";
}

}  // namespace

Readback read_back(const Export& e, const std::vector<Export>& all, const Architecture& model) {
    Readback r;
    if (e.id == "deepspeed") deepspeed(e, r);
    else if (e.id == "accelerate") accelerate(e, all, r);
    else if (e.id == "training-arguments") training_arguments(e, all, model, r);
    else if (e.id == "torchrun") torchrun(e, model, r);
    else if (e.id == "litgpt") litgpt(e, model, r);
    else if (e.id == "torchtune") torchtune(e, model, r);
    else if (e.id == "megatron") megatron(e, model, r);
    else r.errors.push_back("unknown export " + e.id);
    return r;
}

}  // namespace vramcalc
