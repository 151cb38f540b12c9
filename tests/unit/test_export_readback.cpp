// The semantic check of the exports (core/exports/export_readback.cpp): every export of the test configurations
// (tests/data/exports/configs.json) and of a combinatorial grid, read back as its consumer reads it, fixes the
// estimate's configuration key for key; what a file leaves to the script it launches is not counted.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exports/export_readback.hpp"
#include "exports/exports.hpp"
#include "exports/text_readers.hpp"
#include "json/api.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"

using nlohmann::json;
using namespace vramcalc;

namespace {

// The modules the estimate adapts: the named projections of adapter_linears, every one of them for "all-linear", the
// output projection only when named (model/architecture.cpp lora_tensors).
json adapted_modules(const Config& c) {
    const std::vector<std::string>& t = c.finetune.targets;
    const bool all = std::find(t.begin(), t.end(), "all-linear") != t.end();
    std::set<std::string> names;
    for (const Linear& l : adapter_linears(c.model))
        if (all || std::find(t.begin(), t.end(), l.name) != t.end()) names.insert(l.name);
    if (std::find(t.begin(), t.end(), c.model.family->head) != t.end()) names.insert(c.model.family->head);
    return json(std::vector<std::string>(names.begin(), names.end()));
}

// The estimate's configuration with the nested finetune and inference_engine objects flattened ("finetune.rank").
json expected_keys(const Config& c) {
    json e = config_to_json(c);
    for (const char* nested : {"finetune", "inference_engine"})
        if (e.contains(nested) && e[nested].is_object()) {
            for (const auto& item : e[nested].items()) e[std::string(nested) + "." + item.key()] = item.value();
            e.erase(nested);
        }
    if (c.finetune.method != FinetuneMethod::full) e["finetune.targets"] = adapted_modules(c);
    e["seq_len"] = c.seq_len;  // under TRL's trainers prompt_len + completion_len, which the echo gives instead
    return e;
}

json peak_of(const json& config) {
    const ApiResult r = estimate_json(config.dump());
    REQUIRE(r.ok);
    const json report = json::parse(r.json);
    return {report["per_gpu_bytes"], report["cpu_bytes"], report["peak_phase"]};
}

// The keys every export of its kind must fix (more where the configuration calls for them).
std::vector<std::string> required_keys(const Export& e, const Config& c) {
    const bool lora = c.finetune.method != FinetuneMethod::full;
    std::vector<std::string> k;
    if (e.id == "deepspeed") k = {"strategy", "micro_batch", "grad_accum", "gpus", "zero", "offload", "precision"};
    if (e.id == "accelerate") k = {"strategy", "gpus", "precision", "compile"};
    if (e.id == "training-arguments")
        k = {"strategy", "micro_batch", "grad_accum", "gpus", "precision", "optimizer", "checkpointing", "attention", "method", "compile"};
    if (e.id == "torchrun") k = {"strategy", "gpus", "precision", "optimizer", "grad_accum", "checkpointing", "compile"};
    if (e.id == "litgpt") k = {"strategy", "gpus", "precision", "micro_batch", "grad_accum", "seq_len", "optimizer", "checkpointing"};
    if (e.id == "torchtune")
        k = {"strategy", "gpus", "precision", "micro_batch", "grad_accum", "seq_len", "optimizer", "checkpointing", "loss"};
    if (e.id == "megatron")
        k = {"strategy", "gpus", "tp", "pp", "cp", "zero", "micro_batch", "grad_accum", "seq_len", "precision", "checkpointing", "optimizer"};
    if (e.id != "deepspeed" && e.id != "accelerate") k.push_back(lora ? "finetune.method" : "finetune");
    if (lora && e.id != "deepspeed" && e.id != "accelerate") k.insert(k.end(), {"finetune.rank", "finetune.targets", "finetune.dropout"});
    if ((e.id == "accelerate" || e.id == "training-arguments" || e.id == "torchrun") && c.strategy == Strategy::fsdp)
        k.insert(k.end(), {"fsdp_version", "zero", "offload"});
    if (e.id == "accelerate" && c.strategy == Strategy::deepspeed) k.insert(k.end(), {"zero", "offload", "micro_batch", "grad_accum"});
    // DeepSpeed names the optimizer for AdamW only (any other is the script's); accelerate's file holds none of its own.
    const bool names_optimizer = (e.id != "accelerate" && e.id != "deepspeed") || c.strategy == Strategy::deepspeed;
    if (c.optimizer == Optimizer::adamw && names_optimizer) k.insert(k.end(), {"optimizer", "optimizer_impl"});
    if (e.id == "training-arguments") {
        if (c.method == TrainingMethod::dpo || c.method == TrainingMethod::ipo || c.method == TrainingMethod::kto)
            k.insert(k.end(), {"seq_len", "reference"});
        if (c.method == TrainingMethod::orpo || c.method == TrainingMethod::simpo) k.insert(k.end(), {"seq_len", "completion_len"});
        if (c.method == TrainingMethod::grpo || c.method == TrainingMethod::rloo)
            k.insert(k.end(), {"completion_len", "num_generations", "steps_per_generation", "num_iterations", "reference"});
        if (c.method == TrainingMethod::distill) k.insert(k.end(), {"completion_len", "teacher_dtype", "divergence"});
        if (c.method == TrainingMethod::ppo) k.insert(k.end(), {"completion_len", "num_mini_batches", "rollout_forward_batch"});
    }
    return k;
}

// Every key the export fixes equals the estimate's; DeepSpeed's and Megatron-LM's own fused Adam may stand for the
// configuration's optimizer_impl only where the estimate is the same with it (memory_terms.cpp models their step).
void check_readback(const Config& c, const std::vector<Export>& all) {
    const json expected = expected_keys(c);
    for (const Export& e : all) {
        INFO(e.id << ":\n" << e.text);
        const Readback r = read_back(e, all, c.model);
        for (const std::string& error : r.errors) FAIL_CHECK(error);
        for (const auto& [key, value] : r.keys.items()) {
            INFO(key << ": the file runs " << value.dump() << ", the estimate is of " << expected.value(key, json()).dump());
            REQUIRE(expected.contains(key));
            if (value.is_object() && value.contains("one_of")) {
                CHECK(std::find(value["one_of"].begin(), value["one_of"].end(), expected[key]) != value["one_of"].end());
            } else if (key == "optimizer_impl" && value != expected[key] && (c.strategy == Strategy::deepspeed || c.strategy == Strategy::megatron)) {
                json as_run = config_to_json(c);
                as_run["optimizer_impl"] = value;
                CHECK(peak_of(as_run) == peak_of(config_to_json(c)));
            } else {
                CHECK(value == expected[key]);
            }
        }
        for (const std::string& key : required_keys(e, c)) {
            INFO("the " << e.id << " export does not fix " << key);
            CHECK(r.keys.contains(key));
        }
    }
}

json read_cases() {
    std::ifstream f(std::string(VRAMCALC_SOURCE_DIR) + "/tests/data/exports/configs.json");
    REQUIRE(f.good());
    return json::parse(f)["cases"];
}

}  // namespace

TEST_CASE("every export of the test configurations runs the estimated configuration, key for key") {
    int configurations = 0, exports = 0;
    std::set<std::string> strategies, methods, precisions, optimizers, offloads, frameworks, finetunes;
    for (const json& c : read_cases()) {
        INFO(c["name"].get<std::string>());
        const Config config = parsed(c["config"]);
        const std::vector<Export> all = exports_for(config);
        check_readback(config, all);
        if (all.empty()) continue;
        ++configurations, exports += int(all.size());
        strategies.insert(to_string(config.strategy)), methods.insert(to_string(config.method));
        precisions.insert(to_string(config.precision)), optimizers.insert(to_string(config.optimizer));
        offloads.insert(to_string(config.offload)), frameworks.insert(config.framework->name);
        finetunes.insert(to_string(config.finetune.method));
    }
    CHECK(configurations >= 30);
    CHECK(strategies.size() == 5);
    CHECK(methods.size() == 10);
    CHECK(precisions.size() >= 6);
    CHECK(optimizers.size() == 8);
    CHECK(offloads.size() == 3);
    CHECK(frameworks.size() == 4);
    CHECK(finetunes.size() == 3);
    CHECK(exports >= 70);
}

TEST_CASE("exports over a combinatorial grid read back to the estimated configuration") {
    int checked = 0;
    for (const char* framework : {"hf", "litgpt", "torchtune", "torchtitan"})
        for (const char* precision : {"32-true", "bf16-mixed", "16-mixed", "bf16-true", "bf16-base-mixed"})
            for (const json& finetune : {json("full"), json{{"method", "lora"}, {"targets", {"all-linear"}}},
                                         json{{"method", "qlora"}, {"targets", {"all-linear"}}, {"quantize_lm_head", true}}})
                for (const json& strategy : {json{{"strategy", "single"}}, json{{"strategy", "ddp"}, {"gpus", 2}},
                                             json{{"strategy", "fsdp"}, {"gpus", 4}, {"zero", 2}, {"fsdp_version", 1}},
                                             json{{"strategy", "fsdp"}, {"gpus", 4}, {"fsdp_version", 2}, {"offload", "optimizer+params"}},
                                             json{{"strategy", "deepspeed"}, {"gpus", 2}, {"zero", 3}, {"offload", "optimizer+params"}},
                                             json{{"strategy", "deepspeed"}, {"gpus", 2}, {"zero", 1}},
                                             json{{"strategy", "megatron"}, {"gpus", 8}, {"tp", 2}, {"pp", 2}, {"zero", 1}}})
                    for (const char* optimizer : {"adamw", "sgd-momentum", "adamw-8bit"})
                        for (const char* checkpointing : {"none", "full"}) {
                            json config = strategy;
                            config["framework"] = framework, config["precision"] = precision, config["optimizer"] = optimizer;
                            config["checkpointing"] = checkpointing, config["model"] = "llama-3.2-1b", config["finetune"] = finetune;
                            const ParsedConfig p = parse_config(config);
                            if (!p.ok()) continue;  // combinations the configuration itself refuses
                            INFO(config.dump());
                            const std::vector<Export> all = exports_for(p.config);
                            check_readback(p.config, all);
                            checked += int(all.size());
                        }
    CHECK(checked > 300);
}

TEST_CASE("a bitsandbytes optimizer on ZeRO-Offload's CPU partitions is refused, naming the optimizer") {
    for (const char* optimizer : {"adamw-8bit", "paged-adamw", "paged-adamw-8bit", "lion"}) {
        const ParsedConfig p = parse_config(json{{"strategy", "deepspeed"}, {"zero", 2}, {"offload", "optimizer"}, {"optimizer", optimizer}});
        REQUIRE(!p.ok());
        CHECK(p.errors[0].field == "optimizer");
        CHECK(p.errors[0].message.find(optimizer) != std::string::npos);
        // Without offload the Trainer hands the optimizer to ZeRO, which steps it on the GPU.
        CHECK(parse_config(json{{"strategy", "deepspeed"}, {"zero", 2}, {"optimizer", optimizer}}).ok());
    }
}

TEST_CASE("the readback follows the consumer, not the writer: what each library does with a text") {
    const Architecture llama = parsed(json::object()).model;
    auto keys = [&](const char* id, const char* filename, const std::string& text, std::vector<Export> also = {}) {
        also.push_back({id, "", filename, "", text});
        return read_back(also.back(), also, llama);
    };
    // PEFT's "all-linear" leaves lm_head out of a PreTrainedModel only: a plain module's output layer is adapted.
    const std::string script = "# x: torchrun --nproc_per_node 2 train.py\nmodel = build_model()\n"
                               "model = get_peft_model(model, LoraConfig(r=4, target_modules=\"all-linear\"))\n"
                               "model = DistributedDataParallel(model.cuda())\noptimizer = torch.optim.AdamW(model.parameters(), lr=1e-05)\n";
    const json targets = keys("torchrun", "train.py", script).keys["finetune.targets"];
    CHECK(std::find(targets.begin(), targets.end(), "lm_head") != targets.end());
    CHECK(targets.size() == 8);  // q, k, v, o, gate, up, down and lm_head
    // Without an "optimizer" block and with offload, accelerate swaps the Trainer's SGD for DeepSpeedCPUAdam.
    const std::string ds = R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "train_batch_size": 1,
                               "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})";
    const std::string args = "from transformers import TrainingArguments\n"
                             "model_kwargs = dict(dtype=torch.float32, attn_implementation=\"sdpa\")\n"
                             "training_args = TrainingArguments(output_dir=\"out\", optim=\"sgd\", deepspeed=\"ds_config.json\")\n";
    const Readback swapped = keys("training-arguments", "training_args.py", args, {{"deepspeed", "", "ds_config.json", "", ds}});
    CHECK(swapped.keys["optimizer"] == "adamw");
    std::string kept_ds = ds;
    kept_ds.insert(1, "\"zero_force_ds_cpu_optimizer\": false, ");
    CHECK(keys("training-arguments", "training_args.py", args, {{"deepspeed", "", "ds_config.json", "", kept_ds}}).keys["optimizer"] == "sgd");
    // TRL's configs checkpoint unless told not to; TrainingArguments does not.
    const std::string dpo = "from trl import DPOConfig\nmodel_kwargs = dict(dtype=torch.float32, attn_implementation=\"sdpa\")\n"
                            "training_args = DPOConfig(output_dir=\"out\", max_length=512)\n";
    CHECK(keys("training-arguments", "training_args.py", dpo).keys["checkpointing"] == "full");
    // YAML 1.1: an unquoted no is a boolean, not accelerate's "no".
    const Readback yaml = keys("accelerate", "accelerate_config.yaml", "distributed_type: 'NO'\nmixed_precision: no\nnum_processes: 1\n");
    CHECK(yaml.errors.size() == 1);
}

TEST_CASE("the text readers read what their consumers read") {
    std::string error;
    // PyYAML: a plain 5e8 is a string (YAML 1.1 floats need a dot), 1.0 a float, 'no' quoted a string.
    const json y = read_yaml("a:\n  b: 5e8\n  c: 1.0\n  d: 'no'\ne: on\n", error);
    CHECK(error.empty());
    CHECK(y == json{{"a", {{"b", "5e8"}, {"c", 1.0}, {"d", "no"}}}, {"e", true}});
    read_yaml("a: 1\n b: 2\n", error);
    CHECK(!error.empty());
    // bash: quotes joined into one word, backslash-newline continues, comments dropped.
    CHECK(shell_commands("# c\nlitgpt a \\\n  --o '{\"x\": 1}' # end\nnext") ==
          std::vector<std::vector<std::string>>{{"litgpt", "a", "--o", "{\"x\": 1}"}, {"next"}});
    // Python: calls with keyword arguments, bodies by indentation, comments ignored.
    error.clear();
    const json py = read_python("x = f(1, k=[2, 'a'], d={\"v\": True})  # f(k=3)\nfor i, l in enumerate(m.layers):\n    if (i + 1) % 2 == 0:\n        g(l)\n", error);
    CHECK(error.empty());
    REQUIRE(py.size() == 2);
    CHECK(py[0]["value"]["kwargs"]["k"] == json{{"list", {2, "a"}}});
    CHECK(python_calls(py, "f").size() == 1);
    CHECK(python_calls(py, "g").size() == 1);
    CHECK(py[1]["body"][0]["if"]["l"]["r"] == 2);
    read_python("x = f(\n", error);
    CHECK(!error.empty());
}
