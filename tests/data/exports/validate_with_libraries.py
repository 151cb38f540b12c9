#!/usr/bin/env python3
"""Loads every export of the test configurations (configs.json) with the library that consumes it, and checks that
what the library holds is what vramcalc estimated, key for key. One JSON line per export goes to validated.jsonl
(keyed by the SHA-256 of the export's text): tests/data/exports/check_validated.py, run by ctest
cli_exports_contract, fails when an export of configs.json has no passing record of its current text.
Not part of ctest itself: it needs the pinned environments (requirements.txt beside this file) and never installs.

    build/venv/bin/python tests/data/exports/validate_with_libraries.py build/native/cli/vramcalc \
        > tests/data/exports/validated.jsonl

- ds_config.json: DeepSpeed 0.19.8's DeepSpeedConfig (with the case's data-parallel size), then deepspeed.initialize
  through accelerate's Accelerator.prepare, as the Trainer runs it, on a tiny model for two steps on the CPU (gloo,
  DS_BUILD_OPS=0: its CPU ops are built on first use), with the optimizer the Trainer would hand over (from the
  case's training_args.py); the optimizer DeepSpeed then steps is compared with the estimate's.
- accelerate_config.yaml: accelerate 1.15's load_config_from_file, `accelerate launch`'s parser and
  _validate_launch_command, the launcher's environment, then the FullyShardedDataParallelPlugin / DeepSpeedPlugin
  built from that environment (ds_config.json beside it), as the launched script builds them.
- training_args.py: executed (TrainingArguments or TRL's config class built for real: TRL 1.16 here, PPOConfig in
  build/venv-trl112); model_kwargs given to from_config of a tiny model of the case's family, LoRA applied by PEFT's
  get_peft_model (the adapted modules listed), the optimizer resolved by Trainer.get_optimizer_cls_and_kwargs.
- train.py (torchrun): run for two optimizer steps by torchrun on gloo with the case's process count, on a tiny
  model with the script's own module names; CUDA calls are mapped to the CPU (cpu_script: gloo, FSDP 1 device_id cpu, CPU autocast and mesh, pin_memory a no-op), and a probe appended
  to the script reports the optimizer, the adapted modules, the sharding and the checkpoint wrappers.
- litgpt.sh: LitGPT 0.5.13's own CLI with --print_config (build/venv-litgpt).
- torchtune.sh: torchtune 0.6.1's recipe registry, _merge_yaml_and_cli_args and config.validate (build/venv-torchtune).
- megatron.sh: Megatron-LM core_v0.15.3's parse_args and validate_args (its source from the git mirror).
Where a check needs a GPU, the record says what was mapped to the CPU.
"""
import ast
import contextlib
import hashlib
import importlib.metadata as metadata
import inspect
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LITGPT_PY = os.path.join(ROOT, "build/venv-litgpt/bin/python")
TORCHTUNE_PY = os.path.join(ROOT, "build/venv-torchtune/bin/python")
TRL112_PY = os.path.join(ROOT, "build/venv-trl112/bin/python")
MEGATRON_REPO = os.environ.get("MEGATRON_REPO", "/work/.mirror/NVIDIA+Megatron-LM/repo")
MEGATRON_TAG = "core_v0.15.3"
CPU_ENV = {"DS_BUILD_OPS": "0", "DS_ACCELERATOR": "cpu", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}

warnings.filterwarnings("ignore")


class Fail(Exception):
    pass


def run_cli(cli, command, config):
    out = subprocess.run([cli, command, "-"], input=json.dumps(config), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@contextlib.contextmanager
def environment(values):
    old = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(old)


@contextlib.contextmanager
def quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def python_json(python, *args, stdin=None, cwd=None, env=None, timeout=1200):
    """Runs this file in another interpreter (or mode) and returns the JSON it prints last."""
    r = subprocess.run([python, __file__, *args], input=stdin, text=True, capture_output=True, cwd=cwd,
                       env={**os.environ, **CPU_ENV, **(env or {})}, timeout=timeout)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode or not lines:
        raise Fail((r.stderr.strip().splitlines() or ["failed"])[-1][:400])
    return json.loads(lines[-1])


# ---------------------------------------------------------------- the estimate's side

def flatten(config):
    out = dict(config)
    for nested in ("finetune", "inference_engine"):
        if isinstance(out.get(nested), dict):
            for k, v in out.pop(nested).items():
                out[f"{nested}.{k}"] = v
    return out


def expected_modules(expected, linear_names, head):
    """The modules the estimate adapts, by name: "all-linear" is every projection of the layers, the output layer only
    when named (README: finetune targets)."""
    targets = expected.get("finetune.targets", [])
    names = {n for n in linear_names if n != head and ("all-linear" in targets or n in targets)}
    return sorted(names | ({head} if head in targets else set()))


def compare(facts, expected):
    """Every fact the library holds must equal the estimate's key; a list value of precision is the choice left to
    the script the file launches."""
    wrong = []
    for key, value in facts.items():
        want = expected.get(key)
        if key == "precision" and isinstance(value, list):
            ok = want in value
        elif key == "finetune.targets":
            ok = value[0] == value[1]
            value, want = value
        else:
            ok = value == want
        if not ok:
            wrong.append(f"{key}: the library runs {value!r}, the estimate is of {want!r}")
    if wrong:
        raise Fail("; ".join(wrong))
    return ", ".join(f"{k}={v[0] if k == 'finetune.targets' else v}" for k, v in sorted(facts.items()))


# ---------------------------------------------------------------- a tiny model of the case's family

def tiny_config(config):
    from transformers import GPT2Config, LlamaConfig

    if str(config.get("model", "llama-2-7b")).startswith("gpt2"):
        return GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128)
    return LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=128)


def linear_leaf_names(model):
    import torch
    return sorted({n.split(".")[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)})


def optimizer_name(opt):
    """An optimizer object in the configuration's names: (optimizer, optimizer_impl or None)."""
    cls = type(opt).__name__
    d = getattr(opt, "defaults", {})
    if cls in ("FusedAdam", "DeepSpeedCPUAdam"):
        return "adamw", "fused"
    if cls == "AdamW":
        return "adamw", "fused" if d.get("fused") else "single-tensor" if d.get("foreach") is False else "foreach"
    if cls == "SGD":
        return ("sgd-momentum" if d.get("momentum", 0) > 0 else "sgd"), None
    names = {"Adafactor": "adafactor", "AdamW8bit": "adamw-8bit", "PagedAdamW": "paged-adamw", "PagedAdamW32bit": "paged-adamw",
             "PagedAdamW8bit": "paged-adamw-8bit", "Lion": "lion", "Lion32bit": "lion"}
    return names.get(cls, cls), None


def trainer_optimizer(cls, kwargs):
    """The Trainer's optimizer class and arguments (trainer_optimizer.py) in the configuration's names; bitsandbytes'
    by its optim_bits and is_paged (its classes step CUDA tensors, so they are not built here)."""
    import torch
    if cls.__module__.startswith("bitsandbytes"):
        bits, paged = kwargs.get("optim_bits", 32), kwargs.get("is_paged", False)
        if cls.__name__ == "Lion":
            return ("lion" if bits == 32 and not paged else f"lion {bits}-bit{' paged' if paged else ''}"), None
        return ("paged-adamw-8bit" if paged and bits == 8 else "paged-adamw" if paged else "adamw-8bit" if bits == 8 else "bnb-adamw"), None
    return optimizer_name(cls([torch.nn.Parameter(torch.zeros(4))], **kwargs))


# ---------------------------------------------------------------- transformers' TrainingArguments, TRL's configs

@contextlib.contextmanager
def world_size(gpus):
    """TrainingArguments.world_size as torchrun's processes see it."""
    from transformers import TrainingArguments
    saved = TrainingArguments.world_size
    TrainingArguments.world_size = property(lambda self: gpus)
    try:
        yield
    finally:
        TrainingArguments.world_size = saved


def exec_training_arguments(text, tmp):
    from transformers import training_args

    training_args.is_torch_bf16_gpu_available = lambda: True  # the check wants an Ampere GPU; this machine has none
    ns = {}
    with contextlib.chdir(tmp), quiet():
        exec(compile(text, "training_args.py", "exec"), ns)
    return ns


def training_arguments(text, case, exports, expected):
    if "from trl.experimental.ppo" in text and not os.environ.get("VRAMCALC_IN_TRL112"):  # TRL 1.12, its own venv
        r = python_json(TRL112_PY, "--training-arguments", json.dumps(case), stdin=json.dumps(exports),
                        env={"VRAMCALC_IN_TRL112": "1", "TRL_EXPERIMENTAL_SILENCE": "1"})
        return r["checked"] + " (build/venv-trl112)"
    import torch
    from transformers import AutoModelForCausalLM, Trainer

    config = case["config"]
    gpus = config.get("gpus", 1)
    with tempfile.TemporaryDirectory() as tmp:
        if "deepspeed" in exports:
            open(os.path.join(tmp, "ds_config.json"), "w").write(exports["deepspeed"])
        with world_size(gpus), environment({}):  # what the script sets in os.environ stays with this case
            ns = exec_training_arguments(text, tmp)
            args = ns["training_args"]
            fsdp = args.fsdp and fsdp_plugin(args.fsdp_plugin_args)
    if args.deepspeed:  # the ZeRO-3 weakref would make from_config below build under deepspeed.zero.Init
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config
        mismatches = args.hf_deepspeed_config.mismatches
        unset_hf_deepspeed_config()
        if mismatches:
            raise Fail("DeepSpeed mismatches: " + "; ".join(mismatches))
    kwargs = dict(ns["model_kwargs"])
    quantized = kwargs.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(tiny_config(config), **kwargs)
    facts = {"micro_batch": args.per_device_train_batch_size, "grad_accum": args.gradient_accumulation_steps,
             "attention": "flash" if model.config._attn_implementation == "sdpa" else "eager",
             "compile": bool(args.torch_compile)}
    weights = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[model.dtype]
    mixed = "bf16" if args.bf16 else "fp16" if args.fp16 else None
    if type(args).__name__ == "PPOConfig":  # PPOTrainer builds its own Accelerator: the launcher's --mixed_precision
        mixed = {"bf16": "bf16", "fp16": "fp16"}.get(text.split("--mixed_precision ")[1].split()[0]) if "--mixed_precision" in text else None
    facts["precision"] = {("fp32", None): "32-true", ("fp32", "bf16"): "bf16-mixed", ("fp32", "fp16"): "16-mixed",
                          ("bf16", None): "bf16-true", ("fp16", None): "16-true", ("bf16", "bf16"): "bf16-base-mixed",
                          ("fp16", "fp16"): "16-base-mixed"}[(weights, mixed)]
    if args.deepspeed:
        facts["precision"] = "bf16-mixed" if args.bf16 else "16-mixed" if args.fp16 else "32-true"  # ZeRO's master copy
    checkpointing = args.gradient_checkpointing or bool(fsdp and fsdp["activation_checkpointing"])
    if type(args).__name__ == "PPOConfig":  # its True default is never applied: PPOTrainer (1.12) calls no gradient_checkpointing_enable
        checkpointing = False
    facts["checkpointing"] = "full" if checkpointing else "none"
    if fsdp:
        facts.update(fsdp_version=fsdp["version"], zero=fsdp["zero"], offload=fsdp["offload"])
    checked = [type(args).__name__, "from_config(**model_kwargs)"]
    if "lora_config" in ns:
        from peft import get_peft_model
        names = linear_leaf_names(model)
        peft_model = get_peft_model(model, ns["lora_config"])
        adapted = sorted({n.split(".lora_A.")[0].split(".")[-1] for n, _ in peft_model.named_parameters() if ".lora_A." in n})
        facts["finetune.targets"] = (adapted, expected_modules(expected, names, "lm_head"))
        facts["finetune.rank"] = ns["lora_config"].r
        facts["finetune.dropout"] = ns["lora_config"].lora_dropout
        facts["finetune.method"] = "qlora" if quantized else "lora"
        checked.append("get_peft_model")
    if quantized:
        if not (quantized.load_in_4bit and quantized.bnb_4bit_quant_type == "nf4"):
            raise Fail("BitsAndBytesConfig is not NF4 4-bit")
        facts["finetune.double_quant"] = quantized.bnb_4bit_use_double_quant
        facts["finetune.quantize_lm_head"] = quantized.llm_int8_skip_modules == []
        checked.append("BitsAndBytesConfig")
    if not (args.deepspeed and json.loads(exports["deepspeed"]).get("optimizer")):  # else DeepSpeed's (ds_config.json)
        cls, opt_kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
        facts["optimizer"], impl = trainer_optimizer(cls, opt_kwargs)
        if impl and config.get("strategy", "single") != "deepspeed":
            facts["optimizer_impl"] = impl
        checked.append(f"optim -> {cls.__module__}.{cls.__name__}")
    trl_facts(args, facts)
    return ", ".join(checked) + "; " + compare(facts, expected)


def trl_facts(args, facts):
    """What a TRL config fixes, as its class holds it after __post_init__ (its defaults applied)."""
    name = type(args).__name__
    if name == "TrainingArguments":
        facts["method"] = "sft"
        return
    method = {"DPOConfig": "dpo", "KTOConfig": "kto", "ORPOConfig": "orpo", "CPOConfig": "simpo", "GRPOConfig": "grpo",
              "RLOOConfig": "rloo", "DistillationConfig": "distill", "PPOConfig": "ppo"}[name]
    if method == "dpo" and list(args.loss_type) == ["ipo"]:
        method = "ipo"
    facts["method"] = method
    if method in ("dpo", "ipo", "kto", "orpo", "simpo"):
        facts["seq_len"] = args.max_length
    if method in ("orpo", "simpo", "grpo", "rloo", "distill"):
        facts["completion_len"] = args.max_completion_length
    if method in ("grpo", "rloo"):
        facts.update(num_generations=args.num_generations, steps_per_generation=args.steps_per_generation,
                     num_iterations=args.num_iterations)
        facts["inference_engine.mode"] = args.vllm_mode if args.use_vllm else None
    if method == "distill":
        facts["divergence"] = {1.0: "reverse-kl", 0.0: "forward-kl"}.get(args.beta, "jsd")
    if method == "ppo":
        facts.update(completion_len=args.response_length, num_mini_batches=args.num_mini_batches,
                     rollout_forward_batch=args.local_rollout_forward_batch_size)


# ---------------------------------------------------------------- accelerate's FSDP plugin

def fsdp_plugin(kwargs):
    """accelerate's FullyShardedDataParallelPlugin as the launched script builds it (from kwargs and the
    environment): its version, sharding, offload and checkpointing in the configuration's names."""
    from accelerate.utils import FullyShardedDataParallelPlugin
    import accelerate.utils.dataclasses as plugin_module
    import torch
    # FSDP 1's sync_module_states asks for the current CUDA device: taken as device 0 (no GPU here).
    saved = plugin_module.is_cuda_available, torch.cuda.current_device
    plugin_module.is_cuda_available, torch.cuda.current_device = (lambda: True), (lambda: 0)
    try:
        with quiet():
            p = FullyShardedDataParallelPlugin(**kwargs)
    finally:
        plugin_module.is_cuda_available, torch.cuda.current_device = saved
    if p.fsdp_version == 1:
        zero = {"NO_SHARD": 0, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3}[p.sharding_strategy.name]
        offload = bool(p.cpu_offload.offload_params)
    else:
        zero = 3 if p.reshard_after_forward else 2
        offload = type(p.cpu_offload).__name__ == "CPUOffloadPolicy"
    return {"version": p.fsdp_version, "zero": zero, "offload": "optimizer+params" if offload else "none",
            "activation_checkpointing": bool(p.activation_checkpointing)}


# ---------------------------------------------------------------- accelerate's config file

def accelerate(text, case, exports, expected):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env, prepare_simple_launcher_cmd_env

    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        open("accelerate_config.yaml", "w").write(text)
        if "deepspeed" in exports:
            open("ds_config.json", "w").write(exports["deepspeed"])
        cfg = load_config_from_file("accelerate_config.yaml")  # unknown top-level keys raise here
        parser = launch_command_parser()
        dests = {a.dest for a in parser._actions}
        for block in ("fsdp_config", "deepspeed_config"):
            unknown = set(getattr(cfg, block)) - dests
            if unknown:
                raise Fail(f"{block}: unknown keys {sorted(unknown)}")
        with quiet():
            args, defaults, mp_from_config = _validate_launch_command(parser.parse_args(["--config_file", "accelerate_config.yaml", "train.py"]))
        facts = {"gpus": args.num_processes}
        mp = args.mixed_precision
        facts["precision"] = {"bf16": ["bf16-mixed", "bf16-base-mixed"], "fp16": ["16-mixed", "16-base-mixed"]}.get(
            mp, ["32-true", "bf16-true", "16-true"])
        facts["strategy"] = "deepspeed" if args.use_deepspeed else "fsdp" if args.use_fsdp else "ddp" if args.multi_gpu else "single"
        if args.use_deepspeed:
            # as launch_command computes them before deepspeed_launcher
            args.deepspeed_fields_from_accelerate_config = ",".join(
                list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else []))
            _, env = prepare_deepspeed_cmd_env(args)
            with environment({k: v for k, v in env.items() if k.startswith("ACCELERATE")}), quiet():
                plugin = DeepSpeedPlugin()  # reads ds_config.json, refuses accelerate keys the file overrides
            ds = plugin.deepspeed_config
            zero = ds["zero_optimization"]
            device = lambda k: zero.get(k, {}).get("device", "none")
            facts.update(zero=zero["stage"], micro_batch=ds["train_micro_batch_size_per_gpu"],
                         grad_accum=ds["gradient_accumulation_steps"],
                         offload="optimizer+params" if device("offload_param") == "cpu" else "optimizer" if device("offload_optimizer") == "cpu" else "none",
                         precision="bf16-mixed" if ds.get("bf16", {}).get("enabled") is True else
                         "16-mixed" if ds.get("fp16", {}).get("enabled") is True else "32-true")
            return f"DeepSpeedPlugin(ds_config.json); " + compare(facts, expected)
        env = prepare_multi_gpu_env(args) if args.use_fsdp or args.multi_gpu else prepare_simple_launcher_cmd_env(args)[1]
        facts["compile"] = env["ACCELERATE_DYNAMO_BACKEND"] != "NO"
        if args.use_fsdp:
            with environment({k: v for k, v in env.items() if k.startswith(("FSDP", "ACCELERATE"))}):
                p = fsdp_plugin({})
            facts.update(fsdp_version=p["version"], zero=p["zero"], offload=p["offload"],
                         checkpointing="full" if p["activation_checkpointing"] else "none")
            return "FullyShardedDataParallelPlugin from the launcher's environment; " + compare(facts, expected)
        return "launcher environment; " + compare(facts, expected)


# ---------------------------------------------------------------- DeepSpeed

class DataParallel:
    """The data-parallel size DeepSpeedConfig asks an mpu for."""
    def __init__(self, size):
        self.size = size

    def get_data_parallel_world_size(self):
        return self.size


def deepspeed(text, case, exports, expected):
    ran = python_json(sys.executable, "--deepspeed-run", json.dumps(case), stdin=json.dumps(exports))
    facts = ran["config"]
    if ran.get("skipped"):
        return f"DeepSpeedConfig; deepspeed.initialize not run: {ran['skipped']}; " + compare(facts, expected)
    facts["optimizer"] = ran["optimizer"]
    if (ran["stage"], ran["offload"], ran["precision"]) != (facts["zero"], facts["offload"] != "none", facts["precision"]):
        raise Fail(f"the engine runs {ran}")
    return (f"DeepSpeedConfig; accelerate prepare + deepspeed.initialize, 2 steps on 1 CPU process "
            f"(train_batch_size {ran['train_batch_size']}): {ran['engine_optimizer']} stepping {ran['basic_optimizer']}; "
            + compare(facts, expected))


def deepspeed_config_facts(ds, gpus):
    """DeepSpeedConfig as DeepSpeed reads the file, with the case's data-parallel size."""
    from deepspeed.runtime.config import DeepSpeedConfig
    with quiet():
        cfg = DeepSpeedConfig(ds, DataParallel(gpus))
    z = cfg.zero_config
    on_cpu = lambda o: o is not None and str(o.device).endswith("cpu")
    return {"micro_batch": cfg.train_micro_batch_size_per_gpu, "grad_accum": cfg.gradient_accumulation_steps, "zero": int(z.stage),
            "precision": "bf16-mixed" if cfg.bfloat16_config.enabled else "16-mixed" if cfg.float16_config.enabled else "32-true",
            "offload": "optimizer+params" if on_cpu(z.offload_param) else "optimizer" if on_cpu(z.offload_optimizer) else "none"}


def deepspeed_run(case, exports):
    """In its own process: the Trainer's path into DeepSpeed (accelerate's prepare), two steps, what the engine runs."""
    import torch
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    from accelerate import Accelerator
    from accelerate.utils import DeepSpeedPlugin, DummyOptim
    from transformers import AutoModelForCausalLM, Trainer

    import deepspeed
    config = case["config"]
    ds = json.loads(exports["deepspeed"])
    with quiet():
        deepspeed.init_distributed("gloo")
    facts = deepspeed_config_facts(ds, config.get("gpus", 1))
    ds["train_batch_size"] = ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"]  # one process here
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "ds_config.json"), "w").write(exports["deepspeed"])
        ns = exec_training_arguments(exports["training-arguments"], tmp)
    args = ns["training_args"]
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config
    unset_hf_deepspeed_config()
    model = AutoModelForCausalLM.from_config(tiny_config(config))
    if "optimizer" in ds:
        optimizer = DummyOptim(model.parameters())  # Trainer: DeepSpeed builds the file's optimizer
    else:
        cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
        if cls.__module__.startswith("bitsandbytes"):
            print(json.dumps({"config": facts, "skipped": f"{cls.__name__} steps CUDA tensors only"}))
            return
        optimizer = cls(model.parameters(), **kwargs)
    if ds.get("fp16", {}).get("enabled"):
        print(json.dumps({"config": facts, "skipped": "fp16 training needs a GPU (DeepSpeed's CPU accelerator has no fp16)"}))
        return
    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=ds), gradient_accumulation_steps=ds["gradient_accumulation_steps"])
    with quiet():
        engine, optimizer = accelerator.prepare(model, optimizer)
        for _ in range(2 * ds["gradient_accumulation_steps"]):
            x = torch.randint(0, 128, (ds["train_micro_batch_size_per_gpu"], 16))
            with accelerator.accumulate(engine):
                accelerator.backward(engine(input_ids=x, labels=x).loss)
                optimizer.step()
                optimizer.zero_grad()
    name, _ = optimizer_name(engine.basic_optimizer)
    print(json.dumps({"config": facts, "optimizer": name, "basic_optimizer": type(engine.basic_optimizer).__name__,
                      "engine_optimizer": type(engine.optimizer).__name__, "stage": engine.zero_optimization_stage(),
                      "offload": bool(engine.zero_cpu_offload()), "train_batch_size": ds["train_batch_size"],
                      "precision": "bf16-mixed" if engine.bfloat16_enabled() else "16-mixed" if engine.fp16_enabled() else "32-true"}))


# ---------------------------------------------------------------- the torchrun script, two steps on gloo

TINY_MODEL = r'''
import torch as _torch
_torch.Tensor.pin_memory = lambda self, *a, **k: self  # CPU offload pins host memory for a GPU: none here
class _Attention(_torch.nn.Module):
    def __init__(self, h, names):
        super().__init__()
        for n in names:
            setattr(self, n, _torch.nn.Linear(h, h, bias=False))
        self.names = names
    def forward(self, x):
        y = sum(getattr(self, n)(x) for n in self.names[:-1])
        return getattr(self, self.names[-1])(y)
class _Block(_torch.nn.Module):
    def __init__(self, h, attn, mlp):
        super().__init__()
        self.self_attn, self.mlp = _Attention(h, attn), _Attention(h, mlp)
    def forward(self, x):
        x = x + self.self_attn(x)
        return x + self.mlp(x)
class _Model(_torch.nn.Module):
    def __init__(self, attn, mlp, v=128, h=32):
        super().__init__()
        self.embed_tokens = _torch.nn.Embedding(v, h)
        self.layers = _torch.nn.ModuleList(_Block(h, attn, mlp) for _ in range(4))
        self.lm_head = _torch.nn.Linear(h, v, bias=False)
    def forward(self, x):
        x = self.embed_tokens(x)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(x)
def build_model():
    return _Model(ATTN, MLP)
loader = [(_torch.randint(0, 128, (MB, 16)), _torch.randint(0, 128, (MB, 16))) for _ in range(2 * GA)]
'''

PROBE = r'''
import json as _json
if dist.get_rank() == 0:
    _m = model.module if hasattr(model, "module") and not hasattr(model, "sharding_strategy") else model
    _names = [n for n, _ in _m.named_modules()]
    _facts = {"optimizer": type(optimizer).__name__, "defaults": {k: v for k, v in optimizer.defaults.items() if k in ("fused", "foreach", "momentum")},
              "steps": _steps[0], "lora": sorted({n.split(".lora_A.")[0].split(".")[-1] for n, _ in _m.named_parameters() if ".lora_A." in n}),
              "wrapped": sum(any(c.__name__ == "CheckpointWrapper" for c in type(m).__mro__) for m in _m.modules()),
              "sharding": str(getattr(model, "sharding_strategy", "")), "offload_params": bool(getattr(getattr(model, "cpu_offload", None), "offload_params", False)),
              "dtypes": sorted({str(p.dtype) for p in _m.parameters()})}
    if hasattr(model, "_get_fsdp_state"):  # FSDP 2: the first layer's parameter group, its mesh
        _g = model.layers[0]._get_fsdp_state()._fsdp_param_group
        _facts["fsdp2"] = {"reshard": _g.post_forward_mesh_info is not None, "offload": type(_g.offload_policy).__name__,
                           "shard_size": _g.mesh_info.shard_mesh_size}
    print("PROBE " + _json.dumps(_facts))
dist.destroy_process_group()
'''


def cpu_script(text, case, modules, steps=True):
    """The script as the CPU runs it: gloo for nccl, no CUDA device calls, CPU autocast and mesh; every edit listed.
    Without `steps`, the training loop is left out (the model and optimizer are built, nothing is stepped)."""
    config = case["config"]
    replace = [('dist.init_process_group("nccl")', 'dist.init_process_group("gloo")'), ("torch.cuda.set_device(local_rank)\n", ""),
               (".cuda()", ""), (", device_ids=[local_rank]", ""), ("device_id=local_rank,", "device_id=torch.device(\"cpu\"),"),
               ('torch.autocast("cuda"', 'torch.autocast("cpu"'), ('init_device_mesh("cuda"', 'init_device_mesh("cpu"'),
               ('torch.amp.GradScaler("cuda")', 'torch.amp.GradScaler("cpu")')]
    for old, new in replace:
        text = text.replace(old, new)
    head = TINY_MODEL.replace("ATTN", repr(modules[0])).replace("MLP", repr(modules[1]))
    head = head.replace("MB", str(config.get("micro_batch", 1))).replace("GA", str(config.get("grad_accum", 1)))
    lines = text.splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if l.startswith("model = build_model()"))
    out = "".join(lines[:at]) + head + "".join(lines[at:])
    counter = "\n_steps = [0]\n_step = optimizer.step\noptimizer.step = lambda *a, **k: (_steps.__setitem__(0, _steps[0] + 1), _step(*a, **k))[1]\n"
    loop = out.index("\nfor step,")
    out = out[:loop] + counter + (out[loop:] if steps else "\n")
    return out + PROBE


def torchrun(text, case, exports, expected):
    config = case["config"]
    gpt2 = str(config.get("model", "")).startswith("gpt2")
    modules = (["c_attn", "c_proj"], ["c_fc", "mlp_c_proj"]) if gpt2 else (["q_proj", "k_proj", "v_proj", "o_proj"], ["gate_proj", "up_proj", "down_proj"])
    if "framework" in config and config["framework"] == "torchtitan":
        modules = (["wq", "wk", "wv", "wo"], ["w1", "w3", "w2"])
    gpus = config.get("gpus", 1)
    # FSDP 1's parameter offload synchronizes CUDA streams in forward: on the CPU the model is built, not stepped.
    steps = not (config.get("fsdp_version") == 1 and config.get("offload") == "optimizer+params")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.py")
        open(path, "w").write(cpu_script(text, case, modules, steps))
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(gpus), path],
                           capture_output=True, text=True, cwd=tmp, env={**os.environ, **CPU_ENV}, timeout=1500)
    probe = [l for l in r.stdout.splitlines() if l.startswith("PROBE ")]
    if r.returncode or not probe:
        errors = [l for l in r.stderr.splitlines() if "Error" in l and not l.startswith(" ")] or ["failed"]
        raise Fail(errors[0][:400])
    p = json.loads(probe[-1][6:])
    facts = {}
    if steps:
        if p["steps"] != 2:
            raise Fail(f"{p['steps']} optimizer steps over {2 * config.get('grad_accum', 1)} micro-batches")
        facts["grad_accum"] = config.get("grad_accum", 1)  # two steps taken over 2 x grad_accum micro-batches
    class_ = type(p["optimizer"], (), {"defaults": p["defaults"]})()
    facts["optimizer"], impl = optimizer_name(class_)
    if impl:
        facts["optimizer_impl"] = impl
    if expected.get("finetune.method") == "lora":
        linear = modules[0] + modules[1] + ["lm_head"]
        facts["finetune.targets"] = (p["lora"], expected_modules(expected, linear, "lm_head"))
    layers = 4  # TINY_MODEL's; checkpoint wrappers on all, none, or every N-th of them
    n = p["wrapped"]
    facts["checkpointing"] = "none" if n == 0 else "full" if n == layers else {"mode": "layers", "every": layers // n} if layers % n == 0 else f"{n} of {layers} layers"
    if "fsdp2" in p:  # shards of one: NO_SHARD's replicated mesh
        f2 = p["fsdp2"]
        facts["zero"] = 0 if f2["shard_size"] == 1 else 3 if f2["reshard"] else 2
        facts["offload"] = "optimizer+params" if f2["offload"] == "CPUOffloadPolicy" else "none"
    if p["sharding"]:
        facts["zero"] = {"ShardingStrategy.FULL_SHARD": 3, "ShardingStrategy.SHARD_GRAD_OP": 2, "ShardingStrategy.NO_SHARD": 0}[p["sharding"]]
        facts["offload"] = "optimizer+params" if p["offload_params"] else "none"
    ran = "2 optimizer steps" if steps else "built, not stepped (FSDP 1's CPU offload needs CUDA streams)"
    return (f"torchrun --nproc_per_node {gpus} on gloo, {ran} (CPU: gloo, CPU autocast/mesh, device cpu), "
            f"parameters {'/'.join(p['dtypes'])}; " + compare(facts, expected))


# ---------------------------------------------------------------- LitGPT, torchtune, Megatron-LM (their own venvs)

def command_words(text):
    lines = [l for l in text.splitlines() if not l.startswith("#")]
    return shlex.split(" ".join(l.rstrip("\\").strip() for l in lines))


LITGPT_SHIM = """
import sys, jsonargparse
jsonargparse.set_config_read_mode = lambda **k: None  # URL reading needs `requests`, absent from the venv
import litgpt.__main__ as m
sys.argv = ["litgpt"] + sys.argv[1:]
m.main()
"""


def litgpt(text, case, exports, expected):
    import yaml
    words = command_words(text)
    out = subprocess.run([LITGPT_PY, "-c", LITGPT_SHIM, *words[1:], "--print_config"], capture_output=True, text=True)
    if out.returncode != 0:
        raise Fail(out.stderr.strip().splitlines()[-1])
    c = yaml.safe_load(out.stdout)
    devices = int(c["devices"])
    facts = {"gpus": devices, "precision": c["precision"], "micro_batch": c["train"]["micro_batch_size"],
             "grad_accum": c["train"]["global_batch_size"] // (c["train"]["micro_batch_size"] * devices),
             "seq_len": c["train"]["max_seq_length"]}
    opt = c["optimizer"]
    name = opt if isinstance(opt, str) else opt["class_path"]
    init = {} if isinstance(opt, str) else opt.get("init_args", {})
    if words[1] == "finetune_lora":
        facts.update({"finetune.rank": c["lora_r"], "finetune.dropout": c["lora_dropout"],
                      "finetune.method": "qlora" if c.get("quantize") else "lora"})
        switches = {"query": c["lora_query"], "key": c["lora_key"], "value": c["lora_value"], "projection": c["lora_projection"],
                    "mlp": c["lora_mlp"], "head": c["lora_head"]}
        adapted = sorted(k for k, v in switches.items() if v)
        facts["finetune.targets"] = (adapted, expected_modules(expected, ["query", "key", "value", "projection", "mlp"], "head"))
    short = name.split(".")[-1]
    if c.get("quantize") and short == "AdamW":
        facts["optimizer"] = "paged-adamw"  # lora.py steps bitsandbytes' PagedAdamW when quantized
    else:
        facts["optimizer"] = {"AdamW": "adamw", "SGD": "sgd-momentum" if init.get("momentum", 0) > 0 else "sgd",
                              "AdamW8bit": "adamw-8bit", "PagedAdamW": "paged-adamw", "Adafactor": "adafactor"}.get(short, short)
        if short == "AdamW":
            facts["optimizer_impl"] = "fused" if init.get("fused") else "single-tensor" if init.get("foreach") is False else "foreach"
    return f"litgpt {words[1]} --print_config; " + compare(facts, expected)


TORCHTUNE_CHECK = r"""
import ast, json, sys, os
from argparse import Namespace
import yaml
from omegaconf import OmegaConf
from torchtune import config as tune_config
from torchtune._recipe_registry import get_all_recipes
from torchtune.config._utils import _merge_yaml_and_cli_args
import torchtune
words = json.loads(sys.argv[1])
assert words[:2] == ["tune", "run"], words
i, nproc = 2, 1
if words[i] == "--nproc_per_node":
    nproc, i = int(words[i + 1]), i + 2
recipe, assert_config, config_name, overrides = words[i], words[i + 1], words[i + 2], words[i + 3:]
assert assert_config == "--config"
entry = {r.name: r for r in get_all_recipes()}[recipe]
path = {c.name: c.file_path for c in entry.configs}[config_name]  # KeyError: not a config of this recipe
root = os.path.join(os.path.dirname(os.path.dirname(torchtune.__file__)), "recipes")  # shipped beside the package
data = yaml.safe_load(open(os.path.join(root, "configs", path)))
tree = ast.parse(open(os.path.join(root, recipe + ".py")).read())
reads = {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
         and n.func.attr == "get" and isinstance(n.func.value, ast.Name) and n.func.value.id == "cfg"
         and n.args and isinstance(n.args[0], ast.Constant)}
reads |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "cfg"}
for o in overrides:  # a top-level key must be the config's or read by the recipe; config.validate binds the rest
    key = o.split("=")[0]
    if "." not in key and key not in data and key not in reads:
        raise SystemExit("unknown key " + key)
cfg = _merge_yaml_and_cli_args(Namespace(**data), overrides)
tune_config.validate(cfg)
c = OmegaConf.to_container(cfg, resolve=True)
print(json.dumps({"recipe": recipe, "config": config_name, "nproc": nproc, "cfg": c, "overrides": len(overrides)}))
"""


def torchtune(text, case, exports, expected):
    words = command_words(text)
    out = subprocess.run([TORCHTUNE_PY, "-c", TORCHTUNE_CHECK, json.dumps(words)], capture_output=True, text=True)
    if out.returncode != 0:
        raise Fail((out.stderr.strip().splitlines() or ["?"])[-1])
    r = json.loads(out.stdout.strip().splitlines()[-1])
    c = r["cfg"]
    distributed = r["recipe"].endswith("_distributed")
    facts = {"gpus": r["nproc"], "strategy": "fsdp" if distributed else "single", "micro_batch": c["batch_size"],
             "grad_accum": c["gradient_accumulation_steps"], "seq_len": c["tokenizer"]["max_seq_len"],
             "precision": {"bf16": "bf16-true", "fp32": "32-true"}[c["dtype"]],
             "checkpointing": "full" if c.get("enable_activation_checkpointing") else "none",
             "activation_offload": bool(c.get("enable_activation_offloading", False)), "compile": bool(c.get("compile", False))}
    opt = c["optimizer"]
    facts["optimizer"] = {"torch.optim.AdamW": "adamw", "torch.optim.SGD": "sgd-momentum" if opt.get("momentum", 0) else "sgd"}[opt["_component_"]]
    if facts["optimizer"] == "adamw":
        facts["optimizer_impl"] = "fused" if opt.get("fused") else "foreach"
    loss = c["loss"]["_component_"].split(".")[-1]
    facts["loss"] = "chunked" if loss == "CEWithChunkedOutputLoss" else "full"
    if distributed:
        facts["zero"] = 3 if c.get("fsdp_reshard_after_forward", True) else 2
        facts["offload"] = "optimizer+params" if c.get("fsdp_cpu_offload") else "none"
    if r["recipe"].startswith("lora"):
        m = c["model"]
        facts.update({"finetune.rank": m["lora_rank"], "finetune.dropout": m["lora_dropout"],
                      "finetune.method": "qlora" if "qlora" in m["_component_"] else "lora"})
        adapted = set(m["lora_attn_modules"]) | ({"w1", "w2", "w3"} if m.get("apply_lora_to_mlp") else set()) | \
            ({"output"} if m.get("apply_lora_to_output") else set())
        facts["finetune.targets"] = (sorted(adapted), expected_modules(expected, ["q_proj", "k_proj", "v_proj", "output_proj", "w1", "w2", "w3"], "output"))
    else:
        facts["optimizer_in_backward"] = bool(c.get("optimizer_in_bwd", False))
    return f"{r['recipe']} --config {r['config']}: {r['overrides']} overrides merged, config.validate passed; " + compare(facts, expected)


MEGATRON_CHECK = r"""
import json, os, sys, types
sys.modules["six"] = types.ModuleType("six")  # imported by a BERT tokenizer module; not used here
sys.path.insert(0, sys.argv[1])
words = json.loads(sys.argv[2])
env = dict(w.split("=", 1) for w in words[:words.index("torchrun")])  # VAR=value before the launcher
nproc = int(words[words.index("--nproc_per_node") + 1])
words = words[words.index("pretrain_gpt.py"):]
os.environ.update(env, WORLD_SIZE=str(nproc), RANK="0")
sys.argv = [words[0]] + words[1:] + ["--train-iters", "1", "--mock-data", "--tokenizer-type", "NullTokenizer", "--vocab-size", "128"]
import warnings; warnings.filterwarnings("ignore")
import torch
import megatron.training.arguments as arguments
arguments.get_device_arch_version = lambda: 9  # no GPU here: validate as on a Hopper (sm_90) GPU
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
from megatron.training.arguments import parse_args, validate_args
args = parse_args()
validate_args(args)
keys = ["tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size", "data_parallel_size", "micro_batch_size",
        "global_batch_size", "seq_length", "bf16", "fp16", "recompute_granularity", "recompute_method", "recompute_num_layers", "optimizer",
        "sgd_momentum", "use_distributed_optimizer", "sequence_parallel", "virtual_pipeline_model_parallel_size", "world_size"]
print(json.dumps({k: getattr(args, k, None) for k in keys}))
"""


def megatron(text, case, exports, expected, megatron_src):
    words = command_words(text)
    out = subprocess.run([sys.executable, "-c", MEGATRON_CHECK, megatron_src, json.dumps(words)],
                         capture_output=True, text=True, cwd=megatron_src)
    if out.returncode != 0:
        raise Fail((out.stderr.strip().splitlines() or ["?"])[-1])
    a = json.loads(out.stdout.strip().splitlines()[-1])
    facts = {"tp": a["tensor_model_parallel_size"], "pp": a["pipeline_model_parallel_size"], "cp": a["context_parallel_size"],
             "gpus": a["world_size"], "micro_batch": a["micro_batch_size"],
             "grad_accum": a["global_batch_size"] // (a["micro_batch_size"] * a["data_parallel_size"]), "seq_len": a["seq_length"],
             "precision": "bf16-mixed" if a["bf16"] else "16-mixed" if a["fp16"] else "32-true",
             "checkpointing": a["recompute_granularity"] or "none", "zero": 1 if a["use_distributed_optimizer"] else 0,
             "sequence_parallel": bool(a["sequence_parallel"]),
             "optimizer": "adamw" if a["optimizer"] == "adam" else "sgd-momentum" if a["sgd_momentum"] else "sgd"}
    if a["virtual_pipeline_model_parallel_size"]:
        facts["pp_stages_per_rank"] = a["virtual_pipeline_model_parallel_size"]
    if a["recompute_granularity"] == "full" and (a["recompute_method"], a["recompute_num_layers"]) != ("uniform", 1):
        raise Fail("full recomputation other than every layer")
    return ("parse_args + validate_args (data flags added: --train-iters 1 --mock-data --tokenizer-type NullTokenizer "
            "--vocab-size 128; GPU taken as sm_90); " + compare(facts, expected))


# ---------------------------------------------------------------- main

CHECKS = {"deepspeed": deepspeed, "accelerate": accelerate, "training-arguments": training_arguments, "torchrun": torchrun,
          "litgpt": litgpt, "torchtune": torchtune}


def versions():
    v = {p: metadata.version(p) for p in ("torch", "transformers", "peft", "accelerate", "trl", "deepspeed", "bitsandbytes")}
    for venv, packages in ((LITGPT_PY, ("litgpt", "jsonargparse", "lightning")), (TORCHTUNE_PY, ("torchtune", "torchao", "omegaconf")),
                           (TRL112_PY, ("trl",))):
        code = "import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"
        got = json.loads(subprocess.run([venv, "-c", code, *packages], capture_output=True, text=True, check=True).stdout)
        v.update({(f"{k} (PPO)" if venv == TRL112_PY else k): val for k, val in got.items()})
    v["megatron-lm"] = MEGATRON_TAG
    v["python"] = sys.version.split()[0]
    return v


def main():
    if sys.argv[1] == "--training-arguments":  # one PPOConfig export, in TRL 1.12's environment
        case, exports = json.loads(sys.argv[2]), json.loads(sys.stdin.read())
        expected = flatten(case["expected"])
        print(json.dumps({"checked": training_arguments(exports["training-arguments"], case, exports, expected)}))
        return 0
    if sys.argv[1] == "--deepspeed-run":
        deepspeed_run(json.loads(sys.argv[2]), json.loads(sys.stdin.read()))
        return 0
    cli = sys.argv[1]
    only = set(sys.argv[2:])
    cases = json.load(open(os.path.join(HERE, "configs.json")))["cases"]
    print(json.dumps({"versions": versions()}))
    totals = {"OK": 0, "FAIL": 0}
    with tempfile.TemporaryDirectory() as megatron_src:
        archive = subprocess.run(["git", "-C", MEGATRON_REPO, "archive", MEGATRON_TAG, "megatron"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", megatron_src], input=archive.stdout, check=True)
        for case in cases:
            if only and case["name"] not in only:
                continue
            exports = {e["id"]: e["text"] for e in run_cli(cli, "exports", case["config"])["exports"]}
            case = dict(case, expected=run_cli(cli, "estimate", case["config"])["config"])
            expected = flatten(case["expected"])
            for id_, text in exports.items():
                try:
                    if id_ == "megatron":
                        what = megatron(text, case, exports, expected, megatron_src)
                    else:
                        what = CHECKS[id_](text, case, exports, expected)
                    status = "OK"
                except Exception as e:  # report and go on
                    status, what = "FAIL", f"{type(e).__name__}: {e}" if not isinstance(e, Fail) else str(e)
                    if os.environ.get("VERBOSE"):
                        traceback.print_exc()
                totals[status] += 1
                print(json.dumps({"case": case["name"], "export": id_, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                                  "status": status, "checked": what}), flush=True)
    print(json.dumps({"totals": totals}))
    return 1 if totals["FAIL"] else 0


if __name__ == "__main__":
    os.environ.update(CPU_ENV)
    sys.exit(main())
