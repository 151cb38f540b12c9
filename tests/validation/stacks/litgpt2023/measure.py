#!/usr/bin/env python3
"""Whole-run and last-step memory of lit-gpt 8641822's (2023-10-16) own LoRA fine-tuning loop (CPU, 1 or 2 ranks).

lit-gpt commit 8641822 is the code that produced LitGPT's published multi-GPU resource tables (2 GPUs, FSDP,
LoRA r 8 on query+value, bf16-true, activation checkpointing, micro-batch 1/2/4, gradient accumulation under
``fabric.no_backward_sync``).  This script imports that commit's ``finetune/lora.py`` and calls its own ``train()``
(unchanged: the loop, ``validate()`` sanity check, ``get_batch``, ``chunked_cross_entropy``, speed monitor) on a
tiny random-weight model of the same shape family, after replaying ``setup()``/``main()`` of the same file line by
line (see ``run_worker``), and records per rank, with ``torch.profiler`` memory events (exact c10 CPU allocator
bytes, the method of tests/validation/measure_hf.py):

- the whole-run peak of live bytes (like ``torch.cuda.max_memory_allocated()`` with no reset: from Fabric/model
  setup through the end of training, the initial ``validate()`` included), where it falls and what is live there;
- the training-only peak (same, without the ``validate()`` sanity check);
- per-phase peaks (forward incl. Fabric's ``convert_output``, loss, backward, optimizer) of the last optimizer step
  (its ``gradient_accumulation_iters`` micro-batches + ``optimizer.step()``/``zero_grad()``) and per micro-batch;
- the logits-sized blocks (size a multiple of the padded vocab V) alive at each peak.

    build/venv-litgpt2023/bin/python tests/validation/stacks/litgpt2023/measure.py \
        --out tests/validation/stacks/litgpt2023/measured.jsonl \
        --trace-out tests/validation/stacks/litgpt2023/traces.txt

Nothing is downloaded.  The lit-gpt source tree is ``build/litgpt-8641822`` (``git archive 8641822``) unless
``--litgpt-dir`` says otherwise.  Each case runs in 1 or 2 fresh worker processes (gloo on 127.0.0.1 for FSDP).
"""
import argparse
import contextlib
import datetime
import gc
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "validation"))

SEQ = 128
GA = 4
STEPS = 2          # optimizer steps; max_iters = STEPS * GA
EVAL_ITERS = 2     # lora.py's eval_iters is 100; every val batch has the same shape here, so 2 give the same peak
VOCAB, PADDED = 2000, 2000   # padded V = 2000 (5^3 | V): no weight or activation but the logits has a size that is a multiple of rows*V

ARCH = {
    # phi-1.5 family (lit_gpt/config.py "phi-1_5"): parallel residual with a shared norm, LayerNorm, bias, lm_head
    # bias, rotary 0.5, GptNeoxMLP with gelu tanh, MHA.
    "phi": dict(name="phi-tiny", block_size=512, vocab_size=VOCAB, padded_vocab_size=PADDED, n_layer=4, n_head=8,
                n_embd=256, rotary_percentage=0.5, parallel_residual=True, shared_attention_norm=True, bias=True,
                lm_head_bias=True, gelu_approximate="tanh", _norm_class="LayerNorm", _mlp_class="GptNeoxMLP",
                intermediate_size=1024),
    # Llama-2-7b family: RMSNorm, LLaMAMLP (SwiGLU), no bias, full rotary, sequential residual, MHA.
    "llama": dict(name="llama-tiny", block_size=512, vocab_size=VOCAB, padded_vocab_size=PADDED, n_layer=4,
                  n_head=8, n_query_groups=8, n_embd=256, rotary_percentage=1.0, parallel_residual=False,
                  bias=False, _norm_class="RMSNorm", norm_eps=1e-5, _mlp_class="LLaMAMLP", intermediate_size=688),
}
LORA = dict(r=8, alpha=16, dropout=0.05, to_query=True, to_key=False, to_value=True, to_projection=False,
            to_mlp=False, to_head=False)

CASES = []
for _arch in ("phi", "llama"):
    for _dev in (1, 2):
        for _mbs in (1, 2, 4):
            CASES.append({"name": "%s_lora_qv_bf16true_%s_mbs%d" % (_arch, "fsdp2" if _dev == 2 else "single", _mbs),
                          "arch": _arch, "devices": _dev, "mbs": _mbs, "seq": SEQ})
# extra: T = 384 (3 lm_head chunks, like the 9 chunks of T = 1044 in the published runs), phi-like, FSDP
for _mbs in (1, 2, 4):
    CASES.append({"name": "phi_lora_qv_bf16true_fsdp2_mbs%d_s384" % _mbs, "arch": "phi", "devices": 2, "mbs": _mbs,
                  "seq": 384})

# QLoRA: finetune/lora.py with --quantize bnb.nf4 / bnb.nf4-dq (Fabric's BitsandbytesPrecision, bf16 compute, every
# nn.Linear quantized, lm_head included; bitsandbytes PagedAdamW), devices 1.  Each case runs:
# - "bnb0.50.2": as bitsandbytes 0.50.2 does it (MatMul4Bit keeps no input);
# - "keepA": bitsandbytes 0.41.1's MatMul4Bit (PR #1270 undone: ctx.tensors = (A, B); forward dequantizes to the
#   quant_state dtype and casts to A's dtype, as <= 0.43.1 did) -- the published tables' 0.41.1;
# and with the model built as
# - lightning 2.1.0 does (the venv's release): Fabric.init_module() on one device enters only the precision's
#   tensor_init_context (bf16 default dtype), so the model is built in bf16 on the device and BitsandbytesPrecision
#   quantizes it layer by layer in fabric.setup_module (_convert_layers);
# - "_init71a": as lightning 71aed751 (the pre-release lit-gpt 8641822 pins) does: init_module also enters the
#   Linear class replacement, so every Linear is quantized in its __init__ on the device (lightning #18734 split
#   init_context on 2023-10-09, which lost this on one device; issue #18913, fixed by #18914 on 2023-11-01).
QCASES = []
for _arch in ("phi", "llama"):
    for _q in ("nf4", "nf4-dq"):
        for _mbs in (1, 2):
            for _bnb in ("0.50.2", "0.41.1"):
                for _init in ("2.1.0", "71aed751"):
                    if _init == "71aed751" and _bnb != "0.41.1":
                        continue
                    QCASES.append({"name": "%s_qlora_%s_qv_bf16true_single_mbs%d_%s%s" % (
                        _arch, _q.replace("-", ""), _mbs, "bnb0.50.2" if _bnb == "0.50.2" else "keepA",
                        "_init71a" if _init == "71aed751" else ""),
                        "arch": _arch, "devices": 1, "mbs": _mbs, "seq": SEQ, "quantize": _q, "bnb": _bnb,
                        "lightning_init": _init})
for _bnb, _init in (("0.50.2", "2.1.0"), ("0.41.1", "2.1.0"), ("0.41.1", "71aed751")):
    QCASES.append({"name": "llama_qlora_nf4_qv_bf16true_single_mbs1_s384_%s%s" % (
        "bnb0.50.2" if _bnb == "0.50.2" else "keepA", "_init71a" if _init == "71aed751" else ""),
        "arch": "llama", "devices": 1, "mbs": 1, "seq": 384, "quantize": "nf4", "bnb": _bnb, "lightning_init": _init})
CASES += QCASES


from profiler_memory import package_version as _ver  # noqa: E402


# --------------------------------------------------------------------------
# worker
# --------------------------------------------------------------------------

class _Region:
    """A record_function opened and closed by hooks (always properly nested in time)."""

    def __init__(self):
        self.stack = []

    def open(self, name):
        from torch.profiler import record_function
        rf = record_function(name)
        rf.__enter__()
        self.stack.append(rf)

    def close(self):
        rf = self.stack.pop()
        rf.__exit__(None, None, None)


HOST_REGION = "host:not_device_memory"
QUANT_OPS_CUDA_LIKE = ("bitsandbytes::quantize_4bit", "bitsandbytes::optimizer_update_32bit")


def install_bnb_shims(case, torch, record_function):
    """Make lightning 2.1.0's BitsandbytesPrecision run on the CPU with bitsandbytes 0.50.2, as on a GPU.

    Each shim is the smallest change that lets the GPU code path run on the CPU (see README, "QLoRA"):
    S1 ``_Linear4bit.__init__``: lightning quantizes in the constructor when ``torch.tensor(0, device=device)`` lands
       on "cuda", i.e. when the layer is built on the accelerator (device None under the device context).  Here the
       accelerator is the CPU: device None -> quantize.  ``_convert_layers`` passes ``device=torch.device("cpu")``
       explicitly: on a GPU machine that layer's initial weight is host memory and it is not quantized there, so
       it is built inside a HOST_REGION (left out of the device curve) and not quantized, as on the GPU.
    S2 ``_Linear4bit._quantize_weight``: ``.to(device="cuda", dtype=torch.half)`` -> ``device="cpu"``; and
       ``params4bit.bnb_quantized = True`` (a 0.50.2 flag; 0.41.1 had none: its ``Params4bit.to`` never re-quantized
       a tensor already on the GPU, while 0.50.2 would re-quantize the packed uint8 data in ``module.to(device)``).
    S3 ``Linear4bit.support_avx512bf16_for_cpu = False``: 0.50.2 repacks the weights for an AVX512-BF16 CPU GEMV in
       eval mode without grad (validate()); a GPU has no such path.
    Checkpoint tensors that lightning's lazy loader materialises are host memory on a GPU machine: ``_lazy_load`` and
    ``_NotYetLoadedTensor._load_tensor`` run in a HOST_REGION.  bitsandbytes' CPU quantizer (a torch-op
    implementation) makes fp32 temporaries the CUDA kernel does not: transients inside ``bitsandbytes::quantize_4bit``
    (and the 32-bit optimizer update) are left out; their outputs stay (analyse()).
    """
    import functools
    import bitsandbytes as bnb
    import bitsandbytes.autograd._functions as bnb_functions
    import lightning.fabric.plugins.precision.bitsandbytes as lbnb
    import lightning.fabric.utilities.load as lload
    lbnb._import_bitsandbytes()   # defines lightning's _Linear4bit & co.
    L4 = lbnb._Linear4bit

    def __init__(self, *args, device=None, **kwargs):
        host = device is not None and torch.device(device).type == "cpu"
        if host:
            with record_function(HOST_REGION):
                bnb.nn.Linear4bit.__init__(self, *args, device=device, **kwargs)
        else:
            bnb.nn.Linear4bit.__init__(self, *args, device=device, **kwargs)
        self.support_avx512bf16_for_cpu = False                                          # S3
        if not host:                                                                     # S1
            self._quantize_weight(self.weight.data)
        self._register_load_state_dict_pre_hook(functools.partial(lbnb._quantize_on_load_hook, self._quantize_weight))
        self.register_load_state_dict_post_hook(lbnb._ignore_missing_weights_hook)
    L4.__init__ = __init__

    def _quantize_weight(self, weight):
        params4bit = self.weight
        w = weight.contiguous().to(device="cpu", dtype=torch.half)                       # S2: "cuda" -> "cpu"
        w_4bit, quant_state = bnb.functional.quantize_4bit(
            w, blocksize=params4bit.blocksize, compress_statistics=params4bit.compress_statistics,
            quant_type=params4bit.quant_type)
        params4bit.data = w_4bit
        params4bit.quant_state = quant_state
        params4bit.bnb_quantized = True                                                  # S2
    L4._quantize_weight = _quantize_weight
    bnb.nn.Linear4bit.support_avx512bf16_for_cpu = False

    orig_lt = lload._NotYetLoadedTensor._load_tensor

    def _load_tensor(self):
        with record_function(HOST_REGION):
            return orig_lt(self)
    lload._NotYetLoadedTensor._load_tensor = _load_tensor

    if case.get("lightning_init") == "71aed751":
        # lightning 71aed751: Strategy.tensor_init_context entered precision.init_context(), which for
        # BitsandbytesPrecision was the dtype context + the torch.nn.Linear class replacement (2.1.0's
        # module_init_context).  2.1.0's single-device strategy enters only tensor_init_context.
        from lightning.fabric.strategies.strategy import Strategy
        orig_mic = Strategy.module_init_context

        def module_init_context(self, empty_init=None):
            stack = orig_mic(self, empty_init)
            stack.enter_context(self.precision.module_init_context())
            return stack
        Strategy.module_init_context = module_init_context

    if case.get("bnb") == "0.41.1":
        # bitsandbytes 0.41.1 (= 0.43.1) MatMul4Bit and matmul_4bit, on 0.50.2's dequantize: PR #1270 undone.
        F = bnb.functional
        orig_fwd = bnb_functions.MatMul4Bit.forward
        orig_matmul_4bit = bnb_functions.matmul_4bit

        def forward(ctx, A, B, out=None, bias=None, quant_state=None):
            if A.numel() == 0:
                return orig_fwd(ctx, A, B, out, bias, quant_state)
            ctx.is_empty = False
            B = B.view(-1, 1)
            # 0.41.1: F.linear(A, F.dequantize_4bit(B, state).to(A.dtype).t(), bias) with B = weight.t(): the
            # weight is dequantized in the quant_state dtype (fp16: lightning quantizes a .half() copy), then cast
            output = torch.nn.functional.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype), bias)
            ctx.state = quant_state
            ctx.dtype_A, ctx.dtype_B, ctx.dtype_bias = A.dtype, B.dtype, None if bias is None else bias.dtype
            if any(ctx.needs_input_grad[:2]):
                ctx.tensors = (A, B)          # A kept until the graph is freed
            else:
                ctx.tensors = (None, None)
            return output
        bnb_functions.MatMul4Bit.forward = staticmethod(forward)

        def matmul_4bit(A, B, quant_state, out=None, bias=None):
            if A.numel() == A.shape[-1] and A.requires_grad is False and A.shape[-1] % quant_state.blocksize == 0:
                # 0.41.1: the CUDA gemv_4bit kernel (one token, no grad; generate()); 0.50.2's no-grad path here
                return orig_matmul_4bit(A, B, quant_state, out, bias)
            return bnb_functions.MatMul4Bit.apply(A, B, out, bias, quant_state)
        bnb_functions.matmul_4bit = matmul_4bit
        bnb.matmul_4bit = matmul_4bit
    return bnb


def write_base_checkpoint(case, litdir, path, torch):
    """lit_model.pth of the base (non-LoRA) lit_gpt GPT, bf16, random weights: what load_checkpoint() reads."""
    sys.path.insert(0, litdir)
    from lit_gpt.model import GPT as BaseGPT, Config as BaseConfig
    torch.manual_seed(0)
    m = BaseGPT(BaseConfig(**ARCH[case["arch"]])).to(torch.bfloat16)
    torch.save(m.state_dict(), path)
    del m


def run_worker(args):
    import torch
    torch.set_num_threads(1)
    from torch.profiler import profile, ProfilerActivity, record_function
    from pathlib import Path
    case = [c for c in CASES if c["name"] == args.case][0]
    devices, mbs = case["devices"], case["mbs"]
    litdir = os.path.abspath(args.litgpt_dir)
    sys.path.insert(0, litdir)
    os.chdir(litdir)
    import lightning as L
    from lightning.fabric.loggers import CSVLogger
    from lightning.fabric.strategies import FSDPStrategy
    import finetune.lora as fl                      # lit-gpt 8641822 finetune/lora.py, imported unchanged
    from lit_gpt.lora import GPT, Block, Config, mark_only_lora_as_trainable

    # ---- the module-level hyperparameters of finetune/lora.py, set as a user would edit them ----
    fl.devices = devices
    fl.micro_batch_size = mbs
    fl.gradient_accumulation_iters = GA
    fl.batch_size = GA * mbs                        # lora.py: gradient_accumulation_iters = batch_size // micro_batch_size
    fl.max_iters = STEPS * GA
    fl.eval_iters = EVAL_ITERS
    # eval_interval = save_interval = 100 optimizer steps (unchanged): only the sanity-check validate() runs

    out_dir = Path(tempfile.mkdtemp(prefix="litgpt2023_"))

    class _Tok:
        """Stand-in for lit_gpt.tokenizer.Tokenizer (no checkpoint files): validate() encodes one prompt and
        decodes the generated ids."""

        def __init__(self, checkpoint_dir):
            self.eos_id = None

        def encode(self, string, device=None, **kw):
            return torch.arange(1, 9, device=device, dtype=torch.int)   # an 8-token prompt

        def decode(self, t):
            return "<%d tokens>" % t.numel()

    fl.Tokenizer = _Tok

    # ---- phase markers around the calls train() makes (the wrapped functions are called unchanged) ----
    reg = _Region()
    state = {"iter": -1, "in_val": False}
    train_data_ref = []

    orig_get_batch = fl.get_batch

    def get_batch(fabric, data, longest_seq_ix=None):
        if train_data_ref and data is train_data_ref[0]:
            if state["iter"] >= 0:
                reg.close()
            state["iter"] += 1
            reg.open("iter%d" % state["iter"])
        return orig_get_batch(fabric, data, longest_seq_ix)
    fl.get_batch = get_batch

    orig_validate = fl.validate

    def validate(*a, **k):
        state["in_val"] = True
        with record_function("phase:validate"):
            if devices > 1:
                # validate() is @torch.inference_mode(); under FSDP it is the first forward, so FSDP's lazy init
                # allocates the unsharded flat-parameter buffers as inference tensors, and the next training
                # all-gather fails on gloo ("Inplace update to inference tensor outside InferenceMode": gloo's
                # all_gather copies into the output views; NCCL writes in place without an autograd check).  On
                # the CPU the same function body runs under torch.no_grad() (same allocations).
                with torch.no_grad():
                    r = orig_validate.__wrapped__(*a, **k)
            else:
                r = orig_validate(*a, **k)
        state["in_val"] = False
        return r
    fl.validate = validate

    orig_ce = fl.chunked_cross_entropy

    def chunked_cross_entropy(*a, **k):
        with record_function("phase:val_loss" if state["in_val"] else "phase:loss"):
            return orig_ce(*a, **k)
    fl.chunked_cross_entropy = chunked_cross_entropy

    # ---- finetune/lora.py setup() (lines 62-98 at 8641822), devices/precision fixed ----
    precision = "bf16-true"
    plugins = None
    quantize = case.get("quantize")
    if quantize:
        bnb = install_bnb_shims(case, torch, record_function)
        from lightning.fabric.plugins import BitsandbytesPrecision
        # lora.py: plugins = BitsandbytesPrecision(quantize[4:], dtype); precision = None
        plugins = BitsandbytesPrecision(quantize, torch.bfloat16)
        precision = None
        ckpt_path = out_dir / "lit_model.pth"
        write_base_checkpoint(case, litdir, ckpt_path, torch)
        import lightning.fabric.utilities.load as lload
        import lit_gpt.utils as lgu
        _orig_lazy = lgu.lazy_load

        def _lazy(*a, **k):
            with record_function(HOST_REGION):
                return _orig_lazy(*a, **k)
        lgu.lazy_load = _lazy
    if devices > 1:
        strategy = FSDPStrategy(
            auto_wrap_policy={Block},
            activation_checkpointing_policy={Block},
            state_dict_type="full",
            limit_all_gathers=True,
            cpu_offload=False,
        )
    else:
        strategy = "auto"
    logger = CSVLogger(out_dir.parent, out_dir.name, flush_logs_every_n_steps=fl.log_interval)

    if devices > 1:
        # Fabric 2.1.0's connector refuses FSDPStrategy unless accelerator is "cuda"/"gpu"
        # (_Connector._check_strategy_and_fallback: "FSDP is only available on GPU").  That guard alone is bypassed:
        # during the check the accelerator flag reads "cuda", then it is "cpu" again; everything else (FSDPStrategy,
        # FSDPPrecision, _FabricModule, no_backward_sync) is Fabric 2.1.0's own code, running on CPU with gloo.
        from lightning.fabric.connector import _Connector
        _orig_check = _Connector._check_strategy_and_fallback

        def _check(self):
            acc = self._accelerator_flag
            self._accelerator_flag = "cuda"
            try:
                _orig_check(self)
            finally:
                self._accelerator_flag = acc
        _Connector._check_strategy_and_fallback = _check
        # Fabric passes device_id=root_device.index (the cuda index on GPUs; None for the CPU), and torch 2.13's
        # FSDP then looks for an accelerator ("FSDP needs a non-CPU accelerator device"): device_id None becomes
        # torch.device("cpu"), the compute device, as the cuda index is on a GPU.
        from torch.distributed.fsdp import FullyShardedDataParallel as _FSDP
        _orig_init = _FSDP.__init__

        def _init(self, module, *a, **k):
            if k.get("device_id", 0) is None:
                k["device_id"] = torch.device("cpu")
            _orig_init(self, module, *a, **k)
        _FSDP.__init__ = _init

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False)
    prof.__enter__()
    with record_function("setup"):
        # accelerator="cpu" is the only addition (lora.py leaves it to "auto" = cuda)
        fabric = L.Fabric(accelerator="cpu", devices=devices, strategy=strategy, precision=precision,
                          loggers=logger, plugins=plugins)
        fabric.launch()   # processes are created externally (LOCAL_RANK/WORLD_SIZE set): sets up the process group

        # ---- finetune/lora.py main() (lines 101-150), without check_valid_checkpoint_dir, torch.load of the data
        #      (synthetic data below) and load_checkpoint (random weights: nothing to load) ----
        speed_monitor = fl.SpeedMonitor(fabric, window_size=50, time_unit="seconds")
        fabric.seed_everything(1337)
        g = torch.Generator().manual_seed(1)
        train_data = [{"input_ids": t, "labels": t.clone()} for t in
                      torch.randint(0, VOCAB, (64, case["seq"]), generator=g)]
        val_data = [{"input_ids": t, "labels": t.clone()} for t in torch.randint(0, VOCAB, (16, case["seq"]), generator=g)]
        train_data_ref.append(train_data)
        config = Config(**ARCH[case["arch"]], **LORA)
        with record_function("phase:init_module"):
            with fabric.init_module(empty_init=(devices > 1)):
                model = GPT(config)
        mark_only_lora_as_trainable(model)
        n_trainable = fl.num_parameters(model, requires_grad=True)
        n_frozen = fl.num_parameters(model, requires_grad=False)
        with record_function("phase:setup_module"):
            model = fabric.setup_module(model)
        trainable_params = [p for p in model.parameters() if p.requires_grad]
        if quantize:
            # lora.py: isinstance(fabric.strategy.precision, BitsandbytesPrecision) -> bnb.optim.PagedAdamW.  On the
            # CPU it warns and allocates its states with torch.zeros_like; on a GPU it pages only tensors with
            # numel >= 1e5 (get_state_buffer), and no LoRA tensor here (nor of the published models) is that large.
            optimizer = bnb.optim.PagedAdamW(trainable_params, lr=fl.learning_rate, weight_decay=fl.weight_decay)
        else:
            optimizer = torch.optim.AdamW(trainable_params, lr=fl.learning_rate, weight_decay=fl.weight_decay)
        optimizer = fabric.setup_optimizers(optimizer)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=fl.max_iters // fl.batch_size)
        if quantize:
            # lora.py: load_checkpoint(fabric, model, checkpoint_path, strict=False): lazy_load + load_state_dict;
            # lightning's pre-hook re-quantizes every 4-bit weight from the checkpoint
            with record_function("phase:load_checkpoint"):
                fl.load_checkpoint(fabric, model, ckpt_path, strict=False)
        fabric.seed_everything(1337 + fabric.global_rank)

    # phase markers on the model call (the _FabricModule: its forward includes convert_output), fabric.backward and
    # the optimizer calls
    def pre(mod, a, k=None):
        reg.open("phase:val_forward" if state["in_val"] else "phase:forward")

    def post(mod, a, out):
        reg.close()
    model.register_forward_pre_hook(pre)
    model.register_forward_hook(post)
    orig_backward = fabric.backward

    def backward(*a, **k):
        with record_function("phase:backward"):
            return orig_backward(*a, **k)
    fabric.backward = backward
    for meth in ("step", "zero_grad"):
        orig = getattr(optimizer, meth)

        def wrapped(*a, _orig=orig, **k):
            with record_function("phase:optimizer"):
                return _orig(*a, **k)
        setattr(optimizer, meth, wrapped)

    # dtype facts, captured at the first training forward
    facts = {}

    def capture(mod, a, out):
        if state["in_val"] or facts:
            return
        outs = out if isinstance(out, list) else [out]
        facts["logits_type"] = "list of %d chunks" % len(outs) if isinstance(out, list) else "tensor"
        facts["logits_dtype_after_fabric"] = str(outs[0].dtype).replace("torch.", "")
        facts["logits_chunk_shapes"] = [list(o.shape) for o in outs]
        facts["rope_cache_dtype"] = str(fabric_orig(model).cos.dtype).replace("torch.", "")
        facts["rope_cache_shape"] = list(fabric_orig(model).cos.shape)
    model.register_forward_hook(capture)

    t0 = time.time()
    fl.train(fabric, model, optimizer, scheduler, train_data, val_data, Path("checkpoints/none"), out_dir,
             speed_monitor)
    reg.close()   # the last iteration
    if devices > 1:
        torch.distributed.barrier()
    prof.__exit__(None, None, None)
    train_s = time.time() - t0

    om = fabric_orig(model)
    facts["param_dtype"] = str(next(om.parameters()).dtype).replace("torch.", "")
    st = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor) and v.dim() > 0]
    facts["optimizer_state_dtype"] = str(st[0].dtype).replace("torch.", "") if st else None
    facts["optimizer_state_bytes_this_rank"] = sum(t.numel() * t.element_size() for t in st)
    facts["params_trainable"] = n_trainable
    facts["params_frozen"] = n_frozen
    facts["fsdp_units"] = fsdp_units(model) if devices > 1 else None
    if quantize:
        facts.update(quant_facts(om, torch))
    res = analyse(prof, case, facts)
    res["train_s"] = round(train_s, 1)
    res["rank"] = fabric.global_rank
    with open(args.result, "w") as f:
        json.dump(res, f)


def quant_facts(om, torch):
    import bitsandbytes as bnb
    lin = [(n, m) for n, m in om.named_modules() if isinstance(m, bnb.nn.Linear4bit)]
    packed = qs = 0
    dts = set()
    seen = set()
    for n, m in lin:
        w = m.weight
        packed += w.numel() * w.element_size()
        st = w.quant_state
        dts.add(str(st.dtype).replace("torch.", ""))
        ts = [st.absmax, st.code, getattr(st, "offset", None)]
        if getattr(st, "state2", None) is not None:
            ts += [st.state2.absmax, st.state2.code]
        for t in ts:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in seen:
                seen.add(t.untyped_storage().data_ptr())
                qs += t.untyped_storage().nbytes()
    other = sum(p.numel() * p.element_size() for p in om.parameters() if not isinstance(p, bnb.nn.Params4bit))
    return {"linear4bit_modules": len(lin), "linear4bit_names": [n for n, _ in lin][:3] + ["..."],
            "linear4bit_packed_bytes": packed, "quant_state_bytes": qs, "quant_state_dtype": sorted(dts),
            "linear4bit_weight_numel": sum(m.in_features * m.out_features for _, m in lin),
            "non_4bit_param_bytes": other,
            "compute_dtype": sorted({str(m.compute_dtype).replace("torch.", "") for _, m in lin})}


def fabric_orig(model):
    m = model._original_module if hasattr(model, "_original_module") else model
    return m


def fsdp_units(model):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    out = []
    for name, m in model.named_modules():
        if isinstance(m, FSDP) and m._handle is not None:
            fp = m._handle.flat_param
            tr = sum(p.numel() for p in fp._params if p.requires_grad) if fp._params is not None else None
            out.append({"unit": name.replace("_forward_module.", "").replace("_fsdp_wrapped_module.", "") or "root",
                        "unsharded_numel": int(fp._unpadded_unsharded_size.numel()),
                        "shard_numel": int(fp.numel()), "flat_param_requires_grad": bool(fp.requires_grad),
                        "trainable_numel": tr})
    return out


# --------------------------------------------------------------------------
# analysis of the profiler events (one rank)
# --------------------------------------------------------------------------

def _names(n):
    p = n.parent
    while p is not None:
        yield p.name
        p = p.parent


def _parents(n):
    p = n.parent
    while p is not None:
        yield p
        p = p.parent


def _describe(n):
    """(phase, iteration, innermost op, autograd node)."""
    phase = it = op = node = None
    for nm in _names(n):
        if op is None and not nm.startswith(("phase:", "iter", "setup")):
            op = nm
        if node is None and nm.startswith("autograd::engine::evaluate_function: "):
            node = nm.split(": ", 1)[1]
        if phase is None and nm.startswith("phase:"):
            phase = nm.split(":", 1)[1]
        if it is None and nm.startswith("iter") and nm[4:].isdigit():
            it = int(nm[4:])
        if nm == "setup" and phase is None:
            phase = "setup"
    return phase, it, op, node


def _opname(n):
    if n is None:
        return None
    ph, it, op, node = _describe(n)
    return (op or "-") if node is None else "%s (%s)" % (op, node)


def _stack(n, k=8):
    return " < ".join(list(_names(n))[:k])


def _where(n):
    ph, it, op, node = _describe(n)
    return "%s%s: %s" % ("iter%d " % it if it is not None else "", ph, _opname(n))


LOSS_NODES = {"LogSoftmaxBackward0", "NllLossBackward0", "MeanBackward0", "CatBackward0", "DivBackward0",
              "ToCopyBackward0", "SliceBackward0", "ViewBackward0", "UnsafeViewBackward0", "SplitBackward0",
              "ReshapeAliasBackward0"}


def analyse(prof, case, facts):
    from profiler_memory import alloc_nodes
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = alloc_nodes(tree)
    # gloo's internal buffers (allocated under c10d::/gloo: ops) are taken out, as in stacks/fsdp/measure.py
    comm_live, main, comm_n = set(), [], 0
    host_n = 0
    for n in allocs:
        ef = n.extra_fields
        if ef.alloc_size > 0:
            if any(a.startswith(("c10d::", "gloo:")) for a in _names(n)):
                comm_live.add(ef.ptr)
                comm_n += 1
                continue
            # QLoRA: host memory on a GPU machine (checkpoint tensors, layers lightning builds on the CPU)
            if any(a == HOST_REGION for a in _names(n)):
                comm_live.add(ef.ptr)
                host_n += 1
                continue
            comm_live.discard(ef.ptr)
        elif ef.ptr in comm_live:
            comm_live.discard(ef.ptr)
            continue
        main.append(n)
    allocs = main
    # bitsandbytes' CPU quantizer / optimizer: drop the blocks allocated and freed inside one call of these ops (the
    # CUDA kernels allocate only their outputs); blocks that outlive the call (the outputs) stay.
    op_of = {}
    for n in allocs:
        for p in _parents(n):
            if p.name in QUANT_OPS_CUDA_LIKE:
                op_of[id(n)] = (p.name, p.start_time_ns)   # the tree's Python wrappers are not stable: no id(p)
                break
    drop, open_in = set(), {}
    for n in allocs:
        ef, o = n.extra_fields, op_of.get(id(n))
        if ef.alloc_size > 0:
            if o is not None:
                open_in[ef.ptr] = (o, id(n))
            else:
                open_in.pop(ef.ptr, None)
        else:
            a = open_in.pop(ef.ptr, None)
            if a is not None and o is not None and a[0] == o:
                drop.add(a[1])
                drop.add(id(n))
    quant_transients_dropped = len(drop) // 2
    allocs = [n for n in allocs if id(n) not in drop]
    V, mbs, ga = PADDED, case["mbs"], GA
    last_step_iters = set(range((STEPS - 1) * ga, STEPS * ga))
    desc = [_describe(n) for n in allocs]

    cum, live = 0, {}
    whole = (0, -1)
    train_pk = (0, -1)
    step_start, step_pk = None, (0, -1)
    phase_pk = defaultdict(lambda: (0, -1))
    micro_pk = defaultdict(int)
    iter_pk = defaultdict(int)
    first_pk = (0, -1)   # the run's first micro-batch: no earlier gradients, optimizer states or previous step
    first_phase_pk = defaultdict(lambda: (0, -1))
    val_pk = (0, -1)
    setup_pk = defaultdict(lambda: (0, -1))
    left_loss = set()   # iterations whose backward has left the loss path (first block/FSDP allocation seen)
    for i, n in enumerate(allocs):
        ph, it, op, node = desc[i]
        in_last = (it in last_step_iters) or (ph == "optimizer" and it == STEPS * ga - 1)
        if in_last and step_start is None:
            step_start = cum
        cum += n.extra_fields.alloc_size
        if cum > whole[0]:
            whole = (cum, i)
        if ph not in ("validate", "val_forward", "val_loss", "setup") and it is not None and cum > train_pk[0]:
            train_pk = (cum, i)
        if ph in ("validate", "val_forward", "val_loss") and cum > val_pk[0]:
            val_pk = (cum, i)
        if it is None and ph in ("setup", "init_module", "setup_module", "load_checkpoint") and cum > setup_pk[ph][0]:
            setup_pk[ph] = (cum, i)
        if it is not None:
            iter_pk[it] = max(iter_pk[it], cum)
        if it == 0 and ph not in ("validate", "val_forward", "val_loss", "setup"):
            if cum > first_pk[0]:
                first_pk = (cum, i)
            if ph is not None and cum > first_phase_pk[ph][0]:
                first_phase_pk[ph] = (cum, i)
        if in_last:
            if cum > step_pk[0]:
                step_pk = (cum, i)
            if ph is not None and cum > phase_pk[ph][0]:
                phase_pk[ph] = (cum, i)
            if ph == "backward" and ((node is not None and node not in LOSS_NODES)
                                     or (op or "").startswith("FullyShardedDataParallel")):
                left_loss.add(it)
            if ph == "backward" and it not in left_loss and cum > phase_pk["loss_backward"][0]:
                phase_pk["loss_backward"] = (cum, i)
            if ph is not None:
                micro_pk["micro%d_%s" % (it - (STEPS - 1) * ga, ph)] = max(
                    micro_pk["micro%d_%s" % (it - (STEPS - 1) * ga, ph)], cum)

    def live_at(idx):
        lv = {}
        for n in allocs[: idx + 1]:
            ef = n.extra_fields
            if ef.alloc_size > 0:
                lv[ef.ptr] = n
            else:
                lv.pop(ef.ptr, None)
        return lv

    chunk_sizes = {mbs * rows * V * b for rows in (128, 127) for b in (2, 4)}

    def logits_sized(idx):
        """Live blocks whose size is a multiple of V·(rows of a 128-token chunk or of the whole micro-batch), not
        allocated during setup (weights), with where they were allocated and their size in units of N·V bytes."""
        lv = live_at(idx)
        out = defaultdict(lambda: [0, 0])
        for ptr, n in lv.items():
            sz = n.extra_fields.alloc_size
            ph, it, op, node = _describe(n)
            if ph in ("setup", "init_module", "setup_module", "load_checkpoint") or sz % V:
                continue
            # QLoRA: a dequantized lm_head weight (V·C·2 B) can have a logits chunk's size
            if any(a.startswith(("MatMul4Bit", "bitsandbytes::")) for a in _names(n)):
                continue
            # exactly a bf16 or fp32 (mbs, 128 or 127, V) chunk (the only sizes of the logits path at T = 128;
            # no other tensor of these models has 2*V or 4*V bytes per token)
            if sz not in chunk_sizes:
                continue
            key = "%s%s %s: %s -> %d B (%.4g B per token*V)" % (
                "iter%d" % it if it is not None else "", "" if it is None else "", ph, _opname(n), sz,
                sz / (mbs * case["seq"] * V))
            out[key][0] += sz
            out[key][1] += 1
        tot = sum(v[0] for v in out.values())
        return {"total_bytes": tot, "bytes_per_token_vocab": round(tot / (mbs * case["seq"] * V), 4),
                "blocks": {k: v[1] for k, v in sorted(out.items(), key=lambda kv: -kv[1][0])}}

    def groups_at(idx, top=18):
        lv = live_at(idx)
        g = defaultdict(lambda: [0, 0])
        for ptr, n in lv.items():
            ph, it, op, node = _describe(n)
            key = "%s | %s | %s" % ("-" if it is None else "iter%d" % it, ph or "-", _opname(n))
            g[key][0] += n.extra_fields.alloc_size
            g[key][1] += 1
        items = sorted(g.items(), key=lambda kv: -kv[1][0])
        return [[k, v[0], v[1]] for k, v in items[:top]], sum(v[0] for v in g.values())

    res = OrderedDict()
    m = OrderedDict()
    m["whole_run_peak_bytes"] = whole[0]
    # What max_memory_allocated reports for the whole run (what the published tables print): the accuracy test
    # compares it with peak_allocated_bytes.
    m["peak_allocated_bytes"] = whole[0]
    m["whole_run_peak_at"] = _where(allocs[whole[1]])
    m["whole_run_peak_stack"] = _stack(allocs[whole[1]])
    m["train_peak_bytes"] = train_pk[0]
    m["train_peak_at"] = _where(allocs[train_pk[1]]) if train_pk[1] >= 0 else None
    m["setup_phase_peaks"] = OrderedDict((ph, {"bytes": v[0], "at": _where(allocs[v[1]]),
                                               "stack": _stack(allocs[v[1]])})
                                         for ph, v in sorted(setup_pk.items(), key=lambda kv: kv[1][1]))
    m["validate_peak_bytes"] = val_pk[0]
    m["validate_peak_at"] = _where(allocs[val_pk[1]]) if val_pk[1] >= 0 else None
    m["last_step_start_bytes"] = step_start
    m["last_step_peak_bytes"] = step_pk[0]
    m["last_step_peak_at"] = _where(allocs[step_pk[1]])
    for ph in ("forward", "loss", "backward", "optimizer"):
        m["last_step_%s_peak_bytes" % ph] = phase_pk[ph][0]
        m["last_step_%s_peak_op" % ph] = _where(allocs[phase_pk[ph][1]]) if phase_pk[ph][1] >= 0 else None
    # the part of the backward that runs the loss path's nodes (CE, Fabric's cast, the chunk slice), before any
    # block's backward
    m["last_step_loss_backward_peak_bytes"] = phase_pk["loss_backward"][0]
    m["last_step_loss_backward_peak_op"] = _where(allocs[phase_pk["loss_backward"][1]]) \
        if phase_pk["loss_backward"][1] >= 0 else None
    m["logits_alive_at_loss_backward_peak"] = logits_sized(phase_pk["loss_backward"][1]) \
        if phase_pk["loss_backward"][1] >= 0 else None
    m["last_step_micro_phase_peaks"] = OrderedDict(sorted(micro_pk.items()))
    m["iteration_peaks"] = [iter_pk[i] for i in sorted(iter_pk)]
    # What a longest-first loop's peak is when the first batch is the longest (longest_batch_first).
    m["first_micro_batch_peak_bytes"] = first_pk[0]
    m["first_micro_batch_peak_at"] = _where(allocs[first_pk[1]]) if first_pk[1] >= 0 else None
    m["first_micro_batch_phase_peaks"] = OrderedDict(
        (ph, {"bytes": v[0], "at": _where(allocs[v[1]])}) for ph, v in sorted(first_phase_pk.items(), key=lambda kv: kv[1][1]))
    m["logits_alive_at_whole_run_peak"] = logits_sized(whole[1])
    m["logits_alive_at_train_peak"] = logits_sized(train_pk[1])
    m["logits_alive_at_last_step_peak"] = logits_sized(step_pk[1])
    m["gloo_internal_blocks"] = comm_n
    if case.get("quantize"):
        m["host_blocks_left_out"] = host_n
        m["bnb_cpu_op_transients_left_out"] = quant_transients_dropped
    m.update(facts)
    res["measured"] = m
    if case.get("quantize"):
        def stack_groups(idx, top=14):
            g = defaultdict(lambda: [0, 0])
            for ptr, n in live_at(idx).items():
                ph, it, op, node = _describe(n)
                key = "%s | %s" % ("-" if it is None else "iter%d" % it, _stack(n, 6))
                g[key][0] += n.extra_fields.alloc_size
                g[key][1] += 1
            return [[k, v[0], v[1]] for k, v in sorted(g.items(), key=lambda kv: -kv[1][0])[:top]]
        res["trace_setup"] = {ph: {"bytes": v[0], "live": stack_groups(v[1])} for ph, v in setup_pk.items()
                              if ph != "setup"}
    gw, tw = groups_at(whole[1])
    gt, tt = groups_at(train_pk[1])
    gf, tf = groups_at(first_pk[1])
    res["trace"] = {"live_at_whole_run_peak": gw, "live_total_whole": tw,
                    "live_at_train_peak": gt, "live_total_train": tt,
                    "live_at_first_micro_batch_peak": gf, "live_total_first": tf}
    return res


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def vramcalc_config(case):
    a = ARCH[case["arch"]]
    head = a["n_embd"] // a["n_head"]
    phi = case["arch"] == "phi"
    cfg = OrderedDict([
        ("framework", "litgpt"), ("framework_version", "2023-10-16"),
        ("model", OrderedDict([
            ("layers", a["n_layer"]), ("hidden", a["n_embd"]), ("heads", a["n_head"]),
            ("kv_heads", a.get("n_query_groups", a["n_head"])), ("head_dim", head), ("ffn", a["intermediate_size"]),
            ("vocab", PADDED), ("tied_embeddings", False), ("max_positions", a["block_size"]),
            ("mlp", "gelu" if phi else "swiglu"), ("norm", "layernorm" if phi else "rmsnorm"),
            ("activation", "gelu_pytorch_tanh" if phi else "silu"), ("bias", a["bias"]),
            ("lm_head_bias", a.get("lm_head_bias", False)), ("position", "rope"),
            ("family", "phi" if phi else "llama"), ("parallel_block", a["parallel_residual"]),
            ("norms_per_layer", 1 if a.get("shared_attention_norm") else 2)])),
        ("seq_len", case["seq"]), ("micro_batch", case["mbs"]), ("grad_accum", GA), ("precision", "bf16-true"),
        ("optimizer", "adamw"), ("optimizer_impl", "single-tensor"),
        ("finetune", OrderedDict([("method", "lora"), ("rank", LORA["r"]),
                                  ("dropout", LORA["dropout"]), ("targets", ["query", "value"])])),
    ])
    if case.get("quantize"):
        # lora.py swaps AdamW for bitsandbytes PagedAdamW (32-bit states; no LoRA tensor reaches its 1e5-element
        # paging threshold, so the states are ordinary device tensors, as here)
        cfg["optimizer"] = "paged-adamw"
        del cfg["optimizer_impl"]
        cfg["finetune"] = OrderedDict([
            ("method", "qlora"), ("rank", LORA["r"]), ("targets", ["query", "value"]), ("dropout", LORA["dropout"]),
            ("double_quant", case["quantize"] == "nf4-dq"), ("quantize_lm_head", True),
            ("backend", "bitsandbytes"), ("backend_version", case["bnb"])])
    cfg.update([
        ("attention", "flash"), ("loss", "chunked"), ("loss_chunks", -(-case["seq"] // 128)), ("lm_head_chunks", True),
        ("adapter_dtype", "base"),
        # Every sample has the same length, so the whole run peaks in a steady step, not in the first micro-batch
        # that lora.py gives the longest sample (first_micro_batch_peak_bytes is that one's peak).
        ("longest_batch_first", False),
        ("device", "cpu"), ("gpu", {"name": "cpu", "memory_gib": 1000}),
    ])
    if case["devices"] == 2:
        cfg.update([("strategy", "fsdp"), ("fsdp_version", 1), ("fsdp_wrap", "layers"), ("gpus", 2), ("zero", 3),
                    ("checkpointing", "full")])
    else:
        cfg.update([("strategy", "single"), ("gpus", 1), ("checkpointing", "none")])
    return cfg


def run_case(case, args, logdir):
    nproc = case["devices"]
    port = free_port()
    procs, results = [], []
    for r in range(nproc):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        if nproc > 1:
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(nproc), NODE_RANK="0",
                       LOCAL_RANK=str(r), RANK=str(r))
        res = os.path.join(logdir, "%s.rank%d.json" % (case["name"], r))
        log = open(os.path.join(logdir, "%s.rank%d.log" % (case["name"], r)), "w")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--case", case["name"], "--result", res,
               "--litgpt-dir", args.litgpt_dir]
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), res, log))
    ok = True
    for p, res, log in procs:
        rc = p.wait()
        log.close()
        if rc != 0:
            ok = False
        else:
            with open(res) as f:
                results.append(json.load(f))
    if not ok:
        raise RuntimeError("worker failed; see %s" % logdir)
    return sorted(results, key=lambda r: r["rank"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--trace-out", default=None)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--litgpt-dir", default=os.path.join(REPO, "build", "litgpt-8641822"))
    ap.add_argument("--logdir", default=None)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--result")
    args = ap.parse_args()
    if args.worker:
        run_worker(args)
        return
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    logdir = args.logdir or tempfile.mkdtemp(prefix="litgpt2023_logs_")
    os.makedirs(logdir, exist_ok=True)
    versions = OrderedDict([("torch", _ver("torch")), ("lightning", _ver("lightning")),
                            ("lit_gpt", "8641822b3249bb94f068c254aa5d13decbc9f0a0"),
                            ("lightning_pinned_by_lit_gpt", "git+https://github.com/Lightning-AI/lightning@"
                                                            "71aed751f7f0ca8422ddca256e602099070f490b"),
                            ("lightning-utilities", _ver("lightning-utilities")),
                            ("jsonargparse", _ver("jsonargparse")), ("python", platform.python_version())])
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    lines, trace = [], []
    for c in cases:
        t = time.time()
        try:
            per_rank = run_case(c, args, logdir)
        except Exception as e:  # noqa: BLE001
            print("%-40s FAILED %s" % (c["name"], e), flush=True)
            continue
        busiest = max(per_rank, key=lambda r: r["measured"]["whole_run_peak_bytes"])
        meas = OrderedDict(busiest["measured"])
        meas["busiest_rank"] = busiest["rank"]
        if len(per_rank) > 1:
            meas["per_rank"] = [r["measured"] for r in per_rank]
        rec = OrderedDict([("name", c["name"]), ("config", vramcalc_config(c)), ("measured", meas),
                           ("litgpt", OrderedDict([
                               ("commit", "8641822"), ("script", "finetune/lora.py train() imported and called"),
                               ("lit_gpt_config", ARCH[c["arch"]]), ("lora", LORA),
                               ("fabric", {"accelerator": "cpu", "devices": c["devices"], "precision": "bf16-true",
                                           "strategy": "FSDPStrategy(auto_wrap_policy={Block}, "
                                                       "activation_checkpointing_policy={Block}, state_dict_type="
                                                       "'full', limit_all_gathers=True, cpu_offload=False)"
                                           if c["devices"] > 1 else "auto"}),
                               ("loop", {"micro_batch_size": c["mbs"], "gradient_accumulation_iters": GA,
                                         "max_iters": STEPS * GA, "optimizer_steps": STEPS, "eval_iters": EVAL_ITERS,
                                         "seq_len": c["seq"]})])),
                           ("versions", versions), ("device", "cpu"), ("torch", _ver("torch")),
                           ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
        if c.get("quantize"):
            rec["litgpt"]["fabric"]["precision"] = None
            rec["litgpt"]["fabric"]["plugins"] = "BitsandbytesPrecision(%r, torch.bfloat16)" % c["quantize"]
            rec["litgpt"]["quantize"] = "bnb." + c["quantize"]
            rec["litgpt"]["optimizer"] = "bitsandbytes.optim.PagedAdamW (lora.py); on the CPU its states are torch.zeros_like"
            rec["litgpt"]["load_checkpoint"] = "lit_model.pth of the base GPT (bf16, random), lazy_load + load_state_dict"
            rec["bitsandbytes"] = OrderedDict([
                ("installed", _ver("bitsandbytes")),
                ("emulates", "0.50.2 as installed" if c["bnb"] == "0.50.2" else
                 "0.41.1 MatMul4Bit/matmul_4bit (<= 0.43.1): ctx.tensors = (A, B) (PR #1270 undone), weight "
                 "dequantized in the quant_state dtype then cast to A's dtype; run on 0.50.2"),
                ("lightning_init", "lightning 2.1.0: model built in bf16 on the device, quantized in setup_module"
                 if c["lightning_init"] == "2.1.0" else
                 "lightning 71aed751 (lit-gpt's pin): Linear replaced and quantized in __init__ under init_module"),
                ("shims", ["S1 _Linear4bit.__init__ accelerator check reads the CPU", "S2 _quantize_weight device "
                           "cuda->cpu and bnb_quantized=True", "S3 no AVX512-BF16 CPU repacking in eval"]),
                ("left_out", "host memory on a GPU machine (checkpoint tensors; layers _convert_layers builds with "
                             "device=cpu); transients inside bitsandbytes::quantize_4bit/optimizer_update_32bit")])
            rec["versions"] = OrderedDict(list(versions.items()) + [("bitsandbytes", _ver("bitsandbytes"))])
        lines.append(rec)
        for r in per_rank:
            trace.append("=" * 100)
            trace.append("=== %s rank %d: whole-run peak %d at %s; train peak %d at %s" % (
                c["name"], r["rank"], r["measured"]["whole_run_peak_bytes"], r["measured"]["whole_run_peak_at"],
                r["measured"]["train_peak_bytes"], r["measured"]["train_peak_at"]))
            for title, key, tot in (("live at the whole-run peak", "live_at_whole_run_peak", "live_total_whole"),
                                    ("live at the training peak", "live_at_train_peak", "live_total_train"),
                                    ("live at the first micro-batch's peak", "live_at_first_micro_batch_peak",
                                     "live_total_first")):
                trace.append("  -- %s (total %d B), by iteration | phase | op (autograd node):" % (
                    title, r["trace"][tot]))
                for k, b, n in r["trace"][key]:
                    trace.append("  %10d x%-4d %s" % (b, n, k))
            for ph, v in r.get("trace_setup", {}).items():
                trace.append("  -- live at the %s peak (%d B), by iteration | allocating op < callers:" % (ph, v["bytes"]))
                for k, b, n in v["live"]:
                    trace.append("  %10d x%-4d %s" % (b, n, k))
        m = meas
        print("%-38s whole=%9d (%s) train=%9d step_start=%9d fwd=%9d loss=%9d bwd=%9d opt=%9d (%.0fs)" % (
            c["name"], m["whole_run_peak_bytes"], m["whole_run_peak_at"], m["train_peak_bytes"],
            m["last_step_start_bytes"], m["last_step_forward_peak_bytes"], m["last_step_loss_peak_bytes"],
            m["last_step_backward_peak_bytes"], m["last_step_optimizer_peak_bytes"], time.time() - t), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    if args.trace_out:
        with open(args.trace_out, "w") as f:
            f.write("\n".join(trace) + "\n")


if __name__ == "__main__":
    main()
