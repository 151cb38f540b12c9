#!/usr/bin/env python3
"""Extracts, from the libraries' own source, the key names and enum values that vramcalc's exports
(core/exports/exports.cpp) may emit, into schema.json; tests/unit/test_exports.cpp checks every emitted key against it.

Run with the project's pinned environment (tests/validation/requirements-hf.txt), from the repository root:
    build/venv/bin/python tests/data/exports/extract_schema.py > tests/data/exports/schema.json
- accelerate, transformers, peft, torch: imported from build/venv (their versions are recorded).
- LitGPT, torchtune, Megatron-LM: read, never imported, from the git mirrors of their repositories at a release
  tag (file and commit recorded): /work/.mirror/<owner>+<name>/repo, or the directories given by the
  LITGPT_REPO, TORCHTUNE_REPO, MEGATRON_REPO environment variables. The arguments of torchtune's components
  (model builders, tokenizers) are read by torchtune's own resolver in build/venv-torchtune (TORCHTUNE_PYTHON).
- TRL: its trainers' config dataclasses, imported in build/venv-trl (TRL 1.16, TRL_PYTHON) and, for PPOConfig,
  build/venv-trl112 (TRL 1.12, the last with PPO; TRL112_PYTHON).
"""
import ast
import dataclasses
import inspect
import json
import os
import subprocess
import sys

import yaml

MIRRORS = "/work/.mirror"
LITGPT = (os.environ.get("LITGPT_REPO", f"{MIRRORS}/Lightning-AI+litgpt/repo"), "v0.5.13")
TORCHTUNE = (os.environ.get("TORCHTUNE_REPO", f"{MIRRORS}/pytorch+torchtune/repo"), "v0.6.1")
TORCHTUNE_PYTHON = os.environ.get("TORCHTUNE_PYTHON", os.path.join(os.path.dirname(__file__), "../../../build/venv-torchtune/bin/python"))
SIGNATURES = """
import inspect, json, sys
from torchtune.config._utils import _get_component_from_path
out = {}
for name in json.loads(sys.argv[1]):
    try:
        out[name] = [p for p in inspect.signature(_get_component_from_path(name)).parameters if p not in ("self", "params")]
    except Exception:  # bitsandbytes' optimizers: the package is not in that environment
        out[name] = None
print(json.dumps(out))
"""
HERE = os.path.dirname(__file__)
TRL_PYTHON = os.environ.get("TRL_PYTHON", os.path.join(HERE, "../../../build/venv-trl/bin/python"))
TRL112_PYTHON = os.environ.get("TRL112_PYTHON", os.path.join(HERE, "../../../build/venv-trl112/bin/python"))
TRL_FIELDS = """
import dataclasses, importlib, json, sys, trl
out = {"version": trl.__version__}
for path in json.loads(sys.argv[1]):
    module, name = path.rsplit(".", 1)
    out[path] = sorted(f.name for f in dataclasses.fields(getattr(importlib.import_module(module), name)) if f.init)
print(json.dumps(out))
"""
# The config classes of the trainers core/setup/training_methods.cpp models.
TRL_CONFIGS = ["trl.DPOConfig", "trl.KTOConfig", "trl.GRPOConfig", "trl.RLOOConfig", "trl.DistillationConfig",
               "trl.experimental.orpo.ORPOConfig", "trl.experimental.cpo.CPOConfig"]
TRL_PPO_CONFIGS = ["trl.experimental.ppo.PPOConfig"]
# The last Megatron-LM release whose arguments.py spells every flag out (later ones derive most from dataclasses).
MEGATRON = (os.environ.get("MEGATRON_REPO", f"{MIRRORS}/NVIDIA+Megatron-LM/repo"), "core_v0.15.3")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def source(repo_tag, path):
    repo, tag = repo_tag
    return git(repo, "show", f"{tag}:{path}")


def commit(repo_tag):
    repo, tag = repo_tag
    return git(repo, "rev-parse", f"{tag}^{{commit}}").strip()


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


# ---------------------------------------------------------------- accelerate (imported)
def accelerate_schema():
    import accelerate
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import launch_command_parser
    from accelerate.utils import constants
    from accelerate.utils.dataclasses import ComputeEnvironment, DistributedType, DynamoBackend, PrecisionType

    groups = {g.title: [a.dest for a in g._group_actions] for g in launch_command_parser()._action_groups}
    choices = {a.dest: list(a.choices) for a in launch_command_parser()._actions if a.choices}
    return {
        "version": accelerate.__version__,
        "source": "commands/config/config_args.py ClusterConfig; commands/launch.py launch_command_parser "
                  "(fsdp_config and deepspeed_config keys are its FSDP and DeepSpeed arguments); utils/constants.py",
        "top_level_keys": sorted(ClusterConfig.__dataclass_fields__),
        "compute_environment": [e.value for e in ComputeEnvironment],
        "distributed_type": [e.value for e in DistributedType],
        "mixed_precision": [e.value for e in PrecisionType],
        "fsdp_config_keys": groups["FSDP Arguments"],
        "deepspeed_config_keys": groups["DeepSpeed Arguments"],
        "dynamo_config_keys": [d for d in groups["Resource Selection Arguments"] if d.startswith("dynamo_")],
        "dynamo_backend": [e.value for e in DynamoBackend],
        "fsdp_sharding_strategy": constants.FSDP_SHARDING_STRATEGY,
        "fsdp_auto_wrap_policy": constants.FSDP_AUTO_WRAP_POLICY,
        "fsdp_backward_prefetch": constants.FSDP_BACKWARD_PREFETCH,
        "fsdp_state_dict_type": constants.FSDP_STATE_DICT_TYPE,
        "fsdp2_state_dict_type": constants.FSDP2_STATE_DICT_TYPE,
        "deepspeed_offload_device": choices.get("offload_optimizer_device", ["none", "cpu", "nvme"]),
    }


# ---------------------------------------------------------------- transformers and PEFT (imported)
def keys_of(tree, name):
    """String keys read from `name` (a dict) in a module's AST: name["k"], name.get("k"), name.setdefault("k"),
    "k" in name."""
    keys = set()

    def is_name(n):
        return (isinstance(n, ast.Name) and n.id == name) or (isinstance(n, ast.Attribute) and n.attr == name)

    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and is_name(n.value) and isinstance(n.slice, ast.Constant):
            keys.add(n.slice.value)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "setdefault", "pop")
              and is_name(n.func.value) and n.args and isinstance(n.args[0], ast.Constant)):
            keys.add(n.args[0].value)
        elif (isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant) and isinstance(n.ops[0], ast.In)
              and is_name(n.comparators[0])):
            keys.add(n.left.value)
    return sorted(k for k in keys if isinstance(k, str))


def transformers_schema():
    import transformers
    from transformers import BitsAndBytesConfig, TrainingArguments, training_args
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    tree = ast.parse(inspect.getsource(training_args))
    fsdp_keys = [k for k in keys_of(tree, "fsdp_config")]
    return {
        "version": transformers.__version__,
        "source": "training_args.py TrainingArguments, OptimizerNames, _process_fsdp_args (fsdp_config keys); "
                  "utils/quantization_config.py BitsAndBytesConfig; modeling_utils.py ALL_ATTENTION_FUNCTIONS",
        "training_arguments": sorted(f.name for f in dataclasses.fields(TrainingArguments) if f.init),
        "optim": [e.value for e in training_args.OptimizerNames],
        "fsdp_config_keys": fsdp_keys,
        "bits_and_bytes_config": sorted(p for p in inspect.signature(BitsAndBytesConfig.__init__).parameters
                                        if p not in ("self", "kwargs")),
        "bnb_4bit_quant_type": ["fp4", "nf4"],  # BitsAndBytesConfig's docstring; checked by validate_with_libraries.py
        "attn_implementation": sorted({"eager", *ALL_ATTENTION_FUNCTIONS.keys()}),
        "from_pretrained_kwargs": ["attn_implementation", "dtype", "quantization_config"],
    }


def peft_schema():
    import peft
    from peft import LoraConfig, TaskType

    return {
        "version": peft.__version__,
        "source": "tuners/lora/config.py LoraConfig; utils/peft_types.py TaskType",
        "lora_config": sorted(f.name for f in dataclasses.fields(LoraConfig) if f.init),
        "task_type": [e.value for e in TaskType],
    }


def torch_schema():
    import torch
    from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as ckpt
    from torch.distributed import fsdp
    from torch.nn.parallel import DistributedDataParallel

    def params(f):
        return sorted(p for p in inspect.signature(f).parameters if p != "self")

    return {
        "version": torch.__version__,
        "source": "torch.distributed.fsdp, torch.nn.parallel, torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
        "signatures": {
            "FullyShardedDataParallel": params(fsdp.FullyShardedDataParallel.__init__),
            "fully_shard": params(fsdp.fully_shard),
            "MixedPrecision": params(fsdp.MixedPrecision),
            "MixedPrecisionPolicy": params(fsdp.MixedPrecisionPolicy),
            "CPUOffload": params(fsdp.CPUOffload),
            "CPUOffloadPolicy": params(fsdp.CPUOffloadPolicy),
            "DistributedDataParallel": params(DistributedDataParallel.__init__),
            "checkpoint_wrapper": params(ckpt.checkpoint_wrapper),
            "ModuleWrapPolicy": params(fsdp.wrap.ModuleWrapPolicy.__init__),
            "AdamW": params(torch.optim.AdamW.__init__),
            "SGD": params(torch.optim.SGD.__init__),
            "Adafactor": params(torch.optim.Adafactor.__init__),
            "CrossEntropyLoss": params(torch.nn.CrossEntropyLoss.__init__),
        },
        "ShardingStrategy": [s.name for s in fsdp.ShardingStrategy],
    }


# ---------------------------------------------------------------- LitGPT (source at a tag)
def function_args(tree, name):
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return n.args
    raise KeyError(name)


def literal_choices(annotation):
    """The values of a Literal[...] inside an annotation (Literal[...] | None)."""
    for n in ast.walk(annotation):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "Literal":
            values = literal(n.slice)
            return list(values) if isinstance(values, tuple) else [values]
    return None


def litgpt_schema():
    args_py = ast.parse(source(LITGPT, "litgpt/args.py"))
    train_fields = [n.target.id for c in ast.walk(args_py) if isinstance(c, ast.ClassDef) and c.name == "TrainArgs"
                    for n in c.body if isinstance(n, ast.AnnAssign)]
    commands, choices = {}, {}
    for command, path in (("finetune_lora", "litgpt/finetune/lora.py"), ("finetune_full", "litgpt/finetune/full.py")):
        args = function_args(ast.parse(source(LITGPT, path)), "setup")
        flags = []
        for a in args.args:
            if a.arg in ("train", "eval", "log", "data"):
                continue  # dataclass groups: given field by field (train.micro_batch_size, ...)
            flags.append(a.arg)
            if a.annotation is not None and literal_choices(a.annotation):
                choices[a.arg] = literal_choices(a.annotation)
        commands[command] = {"positional": args.args[0].arg, "flags": flags + [f"train.{f}" for f in train_fields]}
    return {
        "version": LITGPT[1], "commit": commit(LITGPT),
        "source": "litgpt/finetune/lora.py setup, litgpt/finetune/full.py setup, litgpt/args.py TrainArgs",
        "commands": commands, "choices": choices,
    }


# ---------------------------------------------------------------- torchtune (source at a tag)
def dotted_keys(node, prefix=""):
    keys = []
    for k, v in node.items():
        keys.append(prefix + k)
        if isinstance(v, dict):
            keys += dotted_keys(v, prefix + k + ".")
    return keys


def cfg_reads(tree):
    """Top-level config keys a recipe reads: cfg.key, cfg["key"], cfg.get("key", ...)."""
    keys = set(keys_of(tree, "cfg"))
    for n in ast.walk(tree):
        if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "cfg"
                and n.attr not in ("get", "items", "keys", "values", "pop")):
            keys.add(n.attr)
    return sorted(keys)


def torchtune_schema():
    namespace = {}
    exec(compile(source(TORCHTUNE, "torchtune/_recipe_registry.py"), "_recipe_registry.py", "exec"), namespace)
    wanted = ("lora_finetune_single_device", "lora_finetune_distributed", "full_finetune_single_device",
              "full_finetune_distributed")
    recipes, configs, components = {}, {}, {}
    for r in namespace["get_all_recipes"]():
        if r.name not in wanted:
            continue
        recipes[r.name] = {"configs": [c.name for c in r.configs],
                           "reads": cfg_reads(ast.parse(source(TORCHTUNE, f"recipes/{r.name}.py")))}
        for c in r.configs:
            # Overrides touch the top level and these nodes; the rest of each config is left out.
            data = yaml.safe_load(source(TORCHTUNE, f"recipes/configs/{c.file_path}"))
            nodes = ("model", "optimizer", "loss", "tokenizer")
            keys = [k for k in dotted_keys(data) if "." not in k or k.split(".")[0] in nodes]
            configs[c.name] = keys
            components[c.name] = {n: data[n]["_component_"] for n in nodes if isinstance(data.get(n), dict)}
    # The arguments each component takes (an override may add one the config leaves out), read by torchtune's own
    # resolver in its pinned environment; plus the components vramcalc's overrides name.
    wanted_components = sorted({v for c in components.values() for v in c.values()} |
                               {"torch.optim.AdamW", "torch.optim.SGD", "torch.nn.CrossEntropyLoss",
                                "torchtune.modules.loss.CEWithChunkedOutputLoss"})
    signatures = json.loads(subprocess.run([TORCHTUNE_PYTHON, "-c", SIGNATURES, json.dumps(wanted_components)],
                                           check=True, capture_output=True, text=True).stdout)
    return {
        "version": TORCHTUNE[1], "commit": commit(TORCHTUNE),
        "source": "torchtune/_recipe_registry.py, recipes/<recipe>.py (cfg reads), recipes/configs/*.yaml; component "
                  "signatures from torchtune 0.6.1 installed in build/venv-torchtune (config._get_component_from_path)",
        "recipes": recipes, "configs": configs, "components": components, "signatures": signatures,
    }


# ---------------------------------------------------------------- Megatron-LM (source at a tag)
def megatron_schema():
    tree = ast.parse(source(MEGATRON, "megatron/training/arguments.py"))
    enums = ast.parse(source(MEGATRON, "megatron/core/transformer/enums.py"))
    enum_members = {c.name: [t.id for n in c.body if isinstance(n, ast.Assign) for t in n.targets]
                    for c in ast.walk(enums) if isinstance(c, ast.ClassDef)}
    flags, choices = [], {}
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"):
            continue
        names = [a.value for a in n.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
        flags += names
        for kw in n.keywords:
            if kw.arg != "choices":
                continue
            values = literal(kw.value)
            if values is None and isinstance(kw.value, ast.Call) and isinstance(kw.value.args[0], ast.Name):
                values = enum_members.get(kw.value.args[0].id)  # choices=list(AttnBackend)
            if values is not None:
                for name in names:
                    choices[name] = list(values)
    return {
        "version": MEGATRON[1], "commit": commit(MEGATRON),
        "source": "megatron/training/arguments.py (add_argument calls), megatron/core/transformer/enums.py",
        "flags": sorted(set(flags)), "choices": choices,
    }


def trl_fields(python, classes):
    out = subprocess.run([python, "-c", TRL_FIELDS, json.dumps(classes)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def trl_schema():
    current, ppo = trl_fields(TRL_PYTHON, TRL_CONFIGS), trl_fields(TRL112_PYTHON, TRL_PPO_CONFIGS)
    return {
        "version": current.pop("version"), "ppo_version": ppo.pop("version"),
        "source": "the config dataclasses' init fields (trl/trainer/*_config.py, trl/experimental/*/)",
        "configs": {**current, **ppo},
    }


def main():
    schema = {
        "comment": "Generated by tests/data/exports/extract_schema.py from the libraries' source; do not edit.",
        "accelerate": accelerate_schema(),
        "transformers": transformers_schema(),
        "peft": peft_schema(),
        "torch": torch_schema(),
        "litgpt": litgpt_schema(),
        "torchtune": torchtune_schema(),
        "megatron": megatron_schema(),
        "trl": trl_schema(),
    }
    json.dump(schema, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
