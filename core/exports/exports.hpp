// The run described by a configuration, written for the tools that launch it: one function per export, each
// giving the file's text, or nothing when that tool cannot express the configuration (an export never
// approximates the run it was estimated for). Frameworks "litgpt" and "torchtune" get only their own command (the
// other exports would describe another stack's run). Key names and values follow the pinned releases named in
// exports.cpp; tests/data/exports/schema.json holds them, extracted from those releases' source.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "setup/config.hpp"

namespace vramcalc {

// A DeepSpeed configuration with this run's batch, precision, ZeRO stage and offload (for strategy "deepspeed").
nlohmann::json deepspeed_config(const Config&);

// ds_config.json: deepspeed_config as a file (strategy "deepspeed").
std::optional<std::string> deepspeed_file(const Config&);
// accelerate_config.yaml for `accelerate launch --config_file` (single, ddp, fsdp, deepspeed).
std::optional<std::string> accelerate_config(const Config&);
// transformers' TrainingArguments(...), with PEFT's LoraConfig and the BitsAndBytesConfig of QLoRA.
std::optional<std::string> training_arguments(const Config&);
// A plain PyTorch script for `torchrun`: DistributedDataParallel, FSDP 1 or FSDP 2 (strategies ddp and fsdp).
std::optional<std::string> torchrun_script(const Config&);
// `litgpt finetune_lora|finetune_full ...` (framework "litgpt").
std::optional<std::string> litgpt_command(const Config&);
// `tune run <recipe> --config <config> key=value ...` (framework "torchtune").
std::optional<std::string> torchtune_command(const Config&);
// `torchrun ... pretrain_gpt.py` with Megatron-LM's arguments (strategy "megatron").
std::optional<std::string> megatron_command(const Config&);

struct Export {
    std::string id;        // deepspeed, accelerate, training-arguments, torchrun, litgpt, torchtune, megatron
    std::string title;
    std::string filename;
    std::string language;  // json, yaml, python, shell
    std::string text;
};

// Every export that applies to the configuration, in the order above.
std::vector<Export> exports_for(const Config&);

}  // namespace vramcalc
