#!/usr/bin/env python3
"""Feeds every export of the test configurations (configs.json) to the real libraries' own parsers and prints
one OK/FAIL/SKIP line per export; the output is committed as validated.txt. Not part of ctest: it needs the
pinned environments, and never installs anything.

    build/venv/bin/python tests/data/exports/validate_with_libraries.py build/native/cli/vramcalc \
        > tests/data/exports/validated.txt

- ds_config.json: transformers' HfTrainerDeepSpeedConfig.trainer_config_process against the same case's
  TrainingArguments (every value the Trainer fills in must match), then accelerate's DeepSpeedPlugin.
- accelerate_config.yaml: accelerate's load_config_from_file, `accelerate launch`'s own parser and
  _validate_launch_command, the launcher's environment (prepare_*_env), then the FullyShardedDataParallelPlugin /
  DeepSpeedPlugin built from that environment, as the launched script builds it.
- training_args.py: executed with torch importable (TrainingArguments, LoraConfig, BitsAndBytesConfig built for
  real); model_kwargs given to from_config of a tiny model of the case's family, LoRA applied to it with PEFT's
  get_peft_model, the optimizer resolved by Trainer.get_optimizer_cls_and_kwargs.
  A TRL trainer's config (DPOConfig, GRPOConfig, ...) is checked the same way in build/venv-trl (TRL 1.16) or, for
  PPOConfig, build/venv-trl112 (TRL 1.12): the script runs itself there on that one export.
- train.py (torchrun): every call's keyword arguments bound to the signature of the torch / PEFT object it names,
  every value that names a library object (ShardingStrategy.FULL_SHARD, torch.bfloat16) evaluated.
- litgpt.sh: LitGPT 0.5.13's own CLI (jsonargparse) with --print_config, in build/venv-litgpt.
- torchtune.sh: the recipe and config from torchtune 0.6.1's registry, the overrides merged by its own
  _merge_yaml_and_cli_args (a top-level key must exist in the config or be read by the recipe), then config.validate
  (every component's arguments bound to its signature),
  in build/venv-torchtune.
- megatron.sh: Megatron-LM core_v0.15.3's parse_args and validate_args (its source from the git mirror).
Where the check needs a GPU or a package absent from the environment, the harness says what it patched or skipped.
"""
import ast
import contextlib
import inspect
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
import traceback
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LITGPT_PY = os.path.join(ROOT, "build/venv-litgpt/bin/python")
TORCHTUNE_PY = os.path.join(ROOT, "build/venv-torchtune/bin/python")
TRL_PY = os.path.join(ROOT, "build/venv-trl/bin/python")
TRL112_PY = os.path.join(ROOT, "build/venv-trl112/bin/python")
MEGATRON_REPO = os.environ.get("MEGATRON_REPO", "/work/.mirror/NVIDIA+Megatron-LM/repo")
MEGATRON_TAG = "core_v0.15.3"

warnings.filterwarnings("ignore")


class Fail(Exception):
    pass


def exports_of(cli, config):
    out = subprocess.run([cli, "exports", "-"], input=json.dumps(config), capture_output=True, text=True, check=True)
    return {e["id"]: e["text"] for e in json.loads(out.stdout)["exports"]}


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


# ---------------------------------------------------------------- transformers (+ PEFT, + the DeepSpeed file)
def tiny_model(config):
    """A 2-layer model of the case's family, for what needs a real model (module names, from_config kwargs)."""
    from transformers import GPT2Config, LlamaConfig

    if config.get("model", "llama-2-7b").startswith("gpt2"):
        return GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128)
    return LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=128)


def training_arguments(text, config, ds_text):
    import importlib.util
    if "\nfrom trl" in text and importlib.util.find_spec("trl") is None:  # a TRL config: in TRL's environment
        python = TRL112_PY if "from trl.experimental.ppo" in text else TRL_PY
        r = subprocess.run([python, __file__, "--training-arguments", json.dumps(config)], input=text, text=True,
                           capture_output=True, env={**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"})
        if r.returncode:
            raise Fail((r.stderr.strip().splitlines() or ["failed"])[-1])
        return r.stdout.strip() + " (" + os.path.relpath(python, ROOT) + ")"
    import transformers
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments, training_args

    patched = ["bf16 GPU check"]
    training_args.is_torch_bf16_gpu_available = lambda: True  # the check wants an Ampere GPU; this machine has none
    gpus = config.get("gpus", 1)
    TrainingArguments.world_size = property(lambda self: gpus)  # what torchrun would give
    if gpus > 1:
        patched.append(f"world_size={gpus}")
    ns = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        if ds_text is not None:
            open("ds_config.json", "w").write(ds_text)
            patched.append("deepspeed stub package")
        if "BitsAndBytesConfig(" in text:
            # BitsAndBytesConfig checks the installed bitsandbytes release; the package is not installed here.
            import importlib.metadata as md
            real = md.version
            md.version = lambda name: "0.49.2" if name == "bitsandbytes" else real(name)
            patched.append("bitsandbytes version")
        with quiet(), environment({}):
            exec(compile(text, "training_args.py", "exec"), ns)
            args = ns["training_args"]
            fsdp = args.fsdp and "fsdp_plugin_args -> " + fsdp_plugin(args.fsdp_plugin_args, config)  # in the script's environment
    checked = [type(args).__name__]
    if args.deepspeed:  # the ZeRO-3 weakref would make from_config below build under deepspeed.zero.Init
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config
        unset_hf_deepspeed_config()
    kwargs = dict(ns["model_kwargs"])
    kwargs.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(tiny_model(config), **kwargs)
    if str(model.dtype) != str(kwargs["dtype"]) or model.config._attn_implementation != kwargs["attn_implementation"]:
        raise Fail(f"from_config gave {model.dtype}, {model.config._attn_implementation}")
    checked.append("from_config(**model_kwargs)")
    if "lora_config" in ns:
        from peft import get_peft_model
        peft_model = get_peft_model(model, ns["lora_config"])
        if not peft_model.peft_config["default"].target_modules:
            raise Fail("LoRA matched no module")
        checked.append("LoraConfig + get_peft_model")
    if "bnb_config" in ns:
        q = ns["bnb_config"]
        if not (q.load_in_4bit and q.bnb_4bit_quant_type in ("nf4", "fp4")):
            raise Fail("BitsAndBytesConfig")
        checked.append("BitsAndBytesConfig")
    if args.optim.value.startswith(("adamw_bnb", "paged_", "lion_")):
        checked.append(f"optim {args.optim.value} (bitsandbytes absent: not resolved)")
    else:
        cls, _ = Trainer.get_optimizer_cls_and_kwargs(args)
        checked.append(f"optim -> {cls.__module__}.{cls.__name__}")
    if args.deepspeed:
        mismatches = args.hf_deepspeed_config.mismatches
        if mismatches:
            raise Fail("DeepSpeed mismatches: " + "; ".join(mismatches))
        checked.append("ds_config.json via HfTrainerDeepSpeedConfig + DeepSpeedPlugin")
    if fsdp:
        checked.append(fsdp)
    if (args.per_device_train_batch_size, args.gradient_accumulation_steps) != (config.get("micro_batch", 1), config.get("grad_accum", 1)):
        raise Fail("batch")
    return f"{', '.join(checked)} [patched: {', '.join(patched)}]"


def deepspeed(text, config, exports):
    ds = json.loads(text)
    if "training-arguments" not in exports:
        raise Fail("no TrainingArguments to check it against")
    return "json parses; checked with training-arguments: " + training_arguments(exports["training-arguments"], config, text)


def fsdp_plugin(kwargs, config):
    """Builds accelerate's FullyShardedDataParallelPlugin as the launched script does (from kwargs and the
    environment) and checks that it runs the estimated sharding, offload and checkpointing."""
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
    zero = config.get("zero", 3)
    sharding = p.sharding_strategy.name if p.fsdp_version == 1 else f"reshard_after_forward={p.reshard_after_forward}"
    expected = {0: "NO_SHARD", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[zero] if p.fsdp_version == 1 else f"reshard_after_forward={zero == 3}"
    offload = config.get("offload") == "optimizer+params"
    offloaded = getattr(p.cpu_offload, "offload_params", type(p.cpu_offload).__name__ == "CPUOffloadPolicy")
    checkpointing = config.get("checkpointing", "none") == "full"
    # (fsdp_version: transformers 5.18's default is 2)
    if (sharding != expected or p.fsdp_version != config.get("fsdp_version", 2) or bool(offloaded) != offload or
            p.activation_checkpointing != checkpointing):
        raise Fail(f"the plugin runs FSDP {p.fsdp_version} {sharding}, offload {p.cpu_offload}, "
                   f"checkpointing {p.activation_checkpointing}; the estimate is of {expected}")
    return (f"FullyShardedDataParallelPlugin(version {p.fsdp_version}, {sharding}, cpu_offload={p.cpu_offload}, "
            f"activation_checkpointing={p.activation_checkpointing}, auto_wrap_policy={p.auto_wrap_policy.__name__})")


# ---------------------------------------------------------------- accelerate
def accelerate(text, config):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env, prepare_simple_launcher_cmd_env

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "accelerate_config.yaml")
        open(path, "w").write(text)
        cfg = load_config_from_file(path)  # unknown top-level keys raise here
        parser = launch_command_parser()
        dests = {a.dest for a in parser._actions}
        for block in ("fsdp_config", "deepspeed_config"):
            unknown = set(getattr(cfg, block)) - dests
            if unknown:
                raise Fail(f"{block}: unknown keys {sorted(unknown)}")
        with quiet():
            args, defaults, mp_from_config = _validate_launch_command(parser.parse_args(["--config_file", path, "train.py"]))
        if args.num_processes != config.get("gpus", 1):
            raise Fail(f"num_processes {args.num_processes}")
        done = f"ClusterConfig({cfg.distributed_type.value}, mixed_precision={cfg.mixed_precision})"
        if args.use_deepspeed:
            args.deepspeed_fields_from_accelerate_config = ",".join(
                list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else []))
            _, env = prepare_deepspeed_cmd_env(args)
            with environment({k: v for k, v in env.items() if k.startswith("ACCELERATE")}), quiet():
                plugin = DeepSpeedPlugin()
            zero = plugin.deepspeed_config["zero_optimization"]
            offload = zero.get("offload_optimizer", {}).get("device", "none")
            if zero["stage"] != config.get("zero", 0) or (offload == "cpu") != (config.get("offload", "none") != "none"):
                raise Fail(f"DeepSpeedPlugin runs stage {zero['stage']} with the optimizer on {offload}")
            return done + f", DeepSpeedPlugin(zero stage {zero['stage']}, offload {zero.get('offload_optimizer', {})})"
        if args.use_fsdp or args.multi_gpu:
            env = prepare_multi_gpu_env(args)
        else:
            _, env = prepare_simple_launcher_cmd_env(args)
        if config.get("compile") and env["ACCELERATE_DYNAMO_BACKEND"] != "INDUCTOR":
            raise Fail("torch.compile is not on")
        if not args.use_fsdp:
            return done + (f", launcher env ACCELERATE_MIXED_PRECISION={env['ACCELERATE_MIXED_PRECISION']}, "
                           f"ACCELERATE_DYNAMO_BACKEND={env['ACCELERATE_DYNAMO_BACKEND']}")
        with environment({k: v for k, v in env.items() if k.startswith(("FSDP", "ACCELERATE"))}):
            return done + ", " + fsdp_plugin({}, config)


# ---------------------------------------------------------------- torchrun script
def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and dotted(node.value):
        return dotted(node.value) + "." + node.attr
    return None


def torchrun(text, config):
    tree = ast.parse(text)
    ns, skipped = {}, []
    for node in tree.body:  # the imports only: the rest needs GPUs and the user's model
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module([node], []), "train.py", "exec"), ns)
            except ImportError as e:
                skipped.append(str(e.name))
    bound = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        name = dotted(node.func)
        if not name or name.split(".")[0] not in ns:
            continue  # the user's objects (model, optimizer)
        try:
            target = eval(name, ns)
        except Exception:
            if name and name.split(".")[0] in skipped:
                continue
            raise Fail(f"{name} does not resolve")
        kwargs = {}
        for kw in node.keywords:
            try:  # values naming library objects must exist (enum members, dtypes)
                kwargs[kw.arg] = eval(compile(ast.Expression(kw.value), "train.py", "eval"), ns)
            except NameError:
                kwargs[kw.arg] = None  # the user's objects (model, mesh, local_rank)
        try:
            inspect.signature(target).bind_partial(**kwargs)
        except TypeError as e:
            raise Fail(f"{name}: {e}")
        bound.append(name.split(".")[-1])
    return "keywords bound: " + ", ".join(sorted(set(bound))) + (f" (not installed: {', '.join(skipped)})" if skipped else "")


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


def litgpt(text, config):
    import yaml
    words = command_words(text)
    if words[0] != "litgpt":
        raise Fail("not a litgpt command")
    out = subprocess.run([LITGPT_PY, "-c", LITGPT_SHIM, *words[1:], "--print_config"], capture_output=True, text=True)
    if out.returncode != 0:
        raise Fail(out.stderr.strip().splitlines()[-1])
    parsed = yaml.safe_load(out.stdout)
    flags = {w[2:]: words[i + 1] for i, w in enumerate(words) if w.startswith("--")}
    for flag, value in flags.items():
        node = parsed
        for part in flag.split("."):
            node = node[part]
        if str(node).lower() != value.lower() and not isinstance(node, dict):
            raise Fail(f"--{flag} {value} parsed as {node!r}")
    return f"litgpt {words[1]} --print_config: {len(flags)} flags parsed back to the values given"


TORCHTUNE_CHECK = r"""
import ast, json, sys, os
from argparse import Namespace
import yaml
from torchtune import config as tune_config
from torchtune._recipe_registry import get_all_recipes
from torchtune.config._utils import _merge_yaml_and_cli_args
import torchtune
words = json.loads(sys.argv[1])
assert words[:2] == ["tune", "run"], words
i = 2
if words[i] == "--nproc_per_node":
    i += 2
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
print(f"{recipe} --config {config_name}: {len(overrides)} overrides merged, config.validate passed")
"""


def torchtune(text, config):
    words = command_words(text)
    out = subprocess.run([TORCHTUNE_PY, "-c", TORCHTUNE_CHECK, json.dumps(words)], capture_output=True, text=True)
    if out.returncode != 0:
        raise Fail((out.stderr.strip().splitlines() or ["?"])[-1])
    return out.stdout.strip()


MEGATRON_CHECK = r"""
import json, os, sys, types
sys.modules["six"] = types.ModuleType("six")  # imported by a BERT tokenizer module; not used here
sys.path.insert(0, sys.argv[1])
words = json.loads(sys.argv[2])
env = dict(w.split("=", 1) for w in words[:words.index("torchrun")])  # VAR=value before the launcher
words = words[words.index("pretrain_gpt.py"):]
os.environ.update(env, WORLD_SIZE=sys.argv[3], RANK="0")
sys.argv = [words[0]] + words[1:] + ["--train-iters", "1", "--mock-data", "--tokenizer-type", "NullTokenizer", "--vocab-size", "128"]
import warnings; warnings.filterwarnings("ignore")
import torch
import megatron.training.arguments as arguments
arguments.get_device_arch_version = lambda: 9  # no GPU here: validate as on a Hopper (sm_90) GPU
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
from megatron.training.arguments import parse_args, validate_args
args = parse_args()
validate_args(args)
print(f"parse_args + validate_args: tp {args.tensor_model_parallel_size}, pp {args.pipeline_model_parallel_size}, "
      f"cp {args.context_parallel_size}, dp {args.data_parallel_size}, micro-batches {args.global_batch_size // (args.micro_batch_size * args.data_parallel_size)}")
"""


def megatron(text, config, megatron_src):
    words = command_words(text)
    out = subprocess.run([sys.executable, "-c", MEGATRON_CHECK, megatron_src, json.dumps(words), str(config.get("gpus", 1))],
                         capture_output=True, text=True, cwd=megatron_src)
    if out.returncode != 0:
        raise Fail((out.stderr.strip().splitlines() or ["?"])[-1])
    return out.stdout.strip().splitlines()[-1] + (" (data flags added: --train-iters 1 --mock-data --tokenizer-type "
                                                  "NullTokenizer --vocab-size 128; GPU taken as sm_90)")


def deepspeed_stub(directory):
    """DeepSpeed is not installed (it builds CUDA ops); transformers' and accelerate's DeepSpeed glue only checks
    that the package and its metadata exist before using their own config code, so an empty package stands in."""
    os.makedirs(os.path.join(directory, "deepspeed"))
    open(os.path.join(directory, "deepspeed", "__init__.py"), "w").write("__version__ = '0.16.0'\n")
    os.makedirs(os.path.join(directory, "deepspeed-0.16.0.dist-info"))
    open(os.path.join(directory, "deepspeed-0.16.0.dist-info", "METADATA"), "w").write(
        "Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.16.0\n")
    sys.path.insert(0, directory)


def main():
    if sys.argv[1] == "--training-arguments":  # one TRL export, run by training_arguments in TRL's environment
        print(training_arguments(sys.stdin.read(), json.loads(sys.argv[2]), None))
        return 0
    cli = sys.argv[1]
    cases = json.load(open(os.path.join(HERE, "configs.json")))["cases"]
    stub = tempfile.mkdtemp()
    deepspeed_stub(stub)
    import accelerate as accelerate_, peft, torch, transformers
    print(f"# validate_with_libraries.py: transformers {transformers.__version__}, accelerate {accelerate_.__version__}, "
          f"peft {peft.__version__}, torch {torch.__version__}; LitGPT and torchtune from build/venv-litgpt and "
          f"build/venv-torchtune; Megatron-LM {MEGATRON_TAG}; deepspeed: an empty stub package (see deepspeed_stub)")
    totals = {"OK": 0, "FAIL": 0}
    with tempfile.TemporaryDirectory() as megatron_src:
        archive = subprocess.run(["git", "-C", MEGATRON_REPO, "archive", MEGATRON_TAG, "megatron"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", megatron_src], input=archive.stdout, check=True)
        for case in cases:
            exports = exports_of(cli, case["config"])
            if not exports:
                print(f"{case['name']}: no export applies (expected: {case['offers'] or 'none'})")
            for id_, text in exports.items():
                try:
                    if id_ == "deepspeed":
                        what = deepspeed(text, case["config"], exports)
                    elif id_ == "accelerate":
                        what = accelerate(text, case["config"])
                    elif id_ == "training-arguments":
                        what = training_arguments(text, case["config"], exports.get("deepspeed"))
                    elif id_ == "torchrun":
                        what = torchrun(text, case["config"])
                    elif id_ == "litgpt":
                        what = litgpt(text, case["config"])
                    elif id_ == "torchtune":
                        what = torchtune(text, case["config"])
                    else:
                        what = megatron(text, case["config"], megatron_src)
                    status = "OK"
                except Exception as e:  # report and go on
                    status, what = "FAIL", f"{type(e).__name__}: {e}" if not isinstance(e, Fail) else str(e)
                    if os.environ.get("VERBOSE"):
                        traceback.print_exc()
                totals[status] += 1
                print(f"{case['name']} {id_}: {status}: {what}")
    print(f"# {totals['OK']} OK, {totals['FAIL']} FAIL")
    return 1 if totals["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
