"""Profiler memory helpers shared by the validation measurement scripts.

measure_hf.py and stacks/{torchtune,litgpt,fsdp}/measure.py all read the same
torch.profiler event tree (profile_memory=True) to find the live bytes at the
peak and to say which phase/op/autograd node allocated them; this module is
the one copy of that machinery, so that the four scripts attribute and print
memory the same way.  It needs torch >= 2 (kineto_results.experimental_event_tree);
measure_torch.py, which runs on Debian's torch 1.13, keeps its own copy.

Each script imports it after putting tests/validation on sys.path, since
they run as plain files (python tests/validation/...py) from different venvs.
"""
import weakref
from collections import defaultdict, OrderedDict

import torch


def package_version(name):
    """The installed distribution's version (importlib.metadata), or None."""
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return None


def alloc_nodes(tree):
    """The allocation events of prof.profiler.kineto_results.experimental_event_tree(), in time order."""
    out, stack = [], list(tree)
    while stack:
        n = stack.pop()
        if type(n.extra_fields).__name__ == "_ExtraFields_Allocation":
            out.append(n)
        stack.extend(n.children)
    out.sort(key=lambda n: (n.start_time_ns, n.id))
    return out


def ancestors(n):
    """The enclosing events of n, innermost first."""
    p = n.parent
    while p is not None:
        yield p
        p = p.parent


def ancestor_names(n):
    """The names of the enclosing events of n, innermost first."""
    return (p.name for p in ancestors(n))


def live_blocks(in_step, upto):
    """{ptr: allocation event} of the blocks live after event `upto` of in_step."""
    live = {}
    for n in in_step[: upto + 1]:
        ef = n.extra_fields
        if ef.alloc_size > 0:
            live[ef.ptr] = n
        else:
            live.pop(ef.ptr, None)
    return live


def split_collective_allocations(allocs):
    """Blocks allocated inside a c10d collective (gloo's own buffers: allocated under c10d:: ops, or gloo:* ops on
    its worker thread) apart from the rest, each with its free: (the rest, the collectives' events). NCCL on CUDA
    keeps its buffers outside PyTorch's allocator."""
    comm_live, main_allocs, comm_events = set(), [], []
    for n in allocs:
        ef = n.extra_fields
        if ef.alloc_size > 0:
            if any(a.startswith(("c10d::", "gloo:")) for a in ancestor_names(n)):
                comm_live.add(ef.ptr)
                comm_events.append(n)
                continue
            comm_live.discard(ef.ptr)
        elif ef.ptr in comm_live:
            comm_live.discard(ef.ptr)
            comm_events.append(n)
            continue
        main_allocs.append(n)
    return main_allocs, comm_events


def describe(n):
    """(phase, innermost op, autograd node) of an allocation event."""
    phase = inner = node = None
    p = n.parent
    while p is not None:
        nm = p.name
        if inner is None and not nm.startswith("phase:") and not nm.startswith("step"):
            inner = nm
        if node is None and nm.startswith("autograd::engine::evaluate_function: "):
            node = nm.split(": ", 1)[1]
        if phase is None and nm.startswith("phase:"):
            phase = nm.split(":", 1)[1]
        p = p.parent
    return phase, inner, node


def opname(n):
    """'op (autograd node)' of an allocation event, as the measured *_op fields print it."""
    if n is None:
        return None
    _, inner, node = describe(n)
    return inner if node is None else "%s (%s)" % (inner, node)


def fmt_shape(s):
    return "(" + ",".join(str(x) for x in s) + ")"


def count_params(model):
    """(total, trainable) parameter counts, tied parameters once."""
    seen = {id(p): p for p in model.parameters()}
    return (sum(p.numel() for p in seen.values()),
            sum(p.numel() for p in seen.values() if p.requires_grad))


def storage(t):
    """(data_ptr, nbytes) of t's storage: views of one storage count once."""
    st = t.untyped_storage()
    return st.data_ptr(), st.nbytes()


def live_tensor_bytes(tensors, storages=None):
    """Bytes of the distinct storages behind tensors (non-tensors skipped).

    storages(t) -> [(ptr, nbytes)] lets a script count wrapper subclasses
    (NF4) or DTensor shards; the default is t's own storage."""
    seen = {}
    for t in tensors:
        if isinstance(t, torch.Tensor):
            for ptr, nb in (storages(t) if storages is not None else [storage(t)]):
                if ptr:
                    seen[ptr] = nb
    return sum(seen.values())


def print_saved_by_block(P, rec, persistent_ptrs, tracer, unit, last, died):
    """The trace's saved-for-backward section for a tracer whose regions are block indices and "outside".

    unit names a block ("layer", "block"), last titles the last one ("decoder layer");
    died says when the nodes of the storages left out died."""
    items = [(p, r) for p, r in rec.items() if p not in persistent_ptrs]
    per_region = defaultdict(int)
    for p, r in items:
        per_region[r["region"]] += r["nbytes"]
    P("  -- saved-for-backward storages (non-persistent, unique storages): total %d B; per region: %s" % (
        sum(per_region.values()),
        ", ".join("%s=%d" % ("%s%d" % (unit, k) if isinstance(k, int) else k, v) for k, v in
                  sorted(per_region.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])))))
    n_persist = sum(1 for p, r in rec.items() if p in persistent_ptrs)
    P("     (%d saved tensors are parameters/buffers/batch, not counted; %d storages (%d B) were saved by "
      "autograd nodes that died %s, not listed)" % (
          n_persist, len(tracer.dead), sum(r["nbytes"] for r in tracer.dead), died))
    target = tracer.n_layers - 1

    def line(r):
        keep = ",".join(sorted(set(r["keepers"]))) or "?"
        return "%9d %-8s %-18s <- %-26s ; %s" % (r["nbytes"], r["dtype"], fmt_shape(r["shape"]),
                                                 r["producer"], keep)

    by_region = defaultdict(list)
    for p, r in items:
        by_region[r["region"]].append(line(r))
    for title, reg in (("%s %d (the last)" % (last, target), target), ("outside the %ss" % unit, "outside")):
        P("  -- saved by %s: storage bytes, dtype, shape of the saved view <- producer grad_fn ;"
          " kept by node.attr" % title)
        for ln in by_region.get(reg, []):
            P("     " + ln)
    # the other blocks, as differences from the last one (multisets of lines)
    ref = defaultdict(int)
    for ln in by_region.get(target, []):
        ref[ln] += 1
    for k in range(target):
        cnt = defaultdict(int)
        for ln in by_region.get(k, []):
            cnt[ln] += 1
        plus = [(ln, cnt[ln] - ref.get(ln, 0)) for ln in cnt if cnt[ln] > ref.get(ln, 0)]
        minus = [(ln, ref[ln] - cnt.get(ln, 0)) for ln in ref if ref[ln] > cnt.get(ln, 0)]
        if not plus and not minus:
            P("  -- %s %d saves the same as %s %d" % (unit, k, unit, target))
            continue
        P("  -- %s %d differs from %s %d: + saved only here, - saved only there (xN = N times)" % (
            unit, k, unit, target))
        for sign, lst in (("+", plus), ("-", minus)):
            for ln, n in lst:
                P("   %s %s%s" % (sign, ln, "  x%d" % n if n > 1 else ""))


def step_window(allocs, t0, t1):
    """Split allocation events at the measured step [t0, t1].

    Returns (in_step, live0, cum_at_start, cum): the events inside the step, the blocks live
    when it began (ptr -> event), the allocator balance at the first event at or after t0
    (None if there is none) and at the end."""
    cum, cum_at_start, in_step, live0 = 0, None, [], {}
    for n in allocs:
        if cum_at_start is None and n.start_time_ns >= t0:
            cum_at_start = cum
        if n.start_time_ns < t0:
            if n.extra_fields.alloc_size > 0:
                live0[n.extra_fields.ptr] = n
            else:
                live0.pop(n.extra_fields.ptr, None)
        if t0 <= n.start_time_ns <= t1:
            in_step.append(n)
        cum += n.extra_fields.alloc_size
    return in_step, live0, cum_at_start, cum


def step_peaks(in_step, phases, init=0):
    """The rise over the step start at the step's peak and at each phase's peak.

    Returns (net, peak, peak_i, phase_peak, phase_op, phase_end, phase_i), net being the rise at
    the step's end; phase_peak starts at init
    for each phase (0: a phase that never rises above the start has no phase_op; None: every
    phase seen gets one); phase_end is the rise when the phase's last event ran."""
    cur, peak, peak_i = 0, 0, -1
    phase_peak = {p: init for p in phases}
    phase_op, phase_end, phase_i = {}, {}, {}
    for i, n in enumerate(in_step):
        cur += n.extra_fields.alloc_size
        ph = describe(n)[0]
        if ph in phase_peak and (phase_peak[ph] is None or cur > phase_peak[ph]):
            phase_peak[ph] = cur
            phase_op[ph] = n
            phase_i[ph] = i
        if ph is not None:
            phase_end[ph] = cur
        if cur > peak:
            peak, peak_i = cur, i
    return cur, peak, peak_i, phase_peak, phase_op, phase_end, phase_i


class BlockSavedTracer:
    """Every storage saved for backward during the measured forward, by region: the index of the
    block (decoder layer) that was running, or "outside".

    pack() is a saved-tensor pack hook that returns a detached alias of the same storage, so
    tracing does not change the measured numbers; walk() then names the autograd node and
    attribute that keep each storage."""

    def __init__(self, layers):
        self.region = "outside"
        self.records = OrderedDict()  # ptr -> dict
        self.dead = []  # saved during the forward by autograd nodes that died before it ended
        self.handles = []
        self.n_layers = len(layers)
        for i, layer in enumerate(layers):
            self.handles.append(layer.register_forward_pre_hook(self._enter(i)))
            self.handles.append(layer.register_forward_hook(self._leave(i)))

    def _enter(self, i):
        def f(mod, args):
            self.region = i
        return f

    def _leave(self, i):
        def f(mod, args, out):
            self.region = "outside"
        return f

    def pack(self, t):
        ptr, nb = storage(t)
        d = t.detach()
        r = self.records.get(ptr)
        if r is None or not any(w() is not None for w in r["refs"]):
            # new storage (or a reused address whose previous saver has died)
            if r is not None:
                self.dead.append(r)
            r = self.records[ptr] = {"shape": tuple(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                                     "nbytes": nb, "producer": t.grad_fn.name() if t.grad_fn is not None else
                                     ("param/leaf" if t.requires_grad else "no-grad"),
                                     "region": self.region, "keepers": [], "refs": []}
            self.records.move_to_end(ptr)
        r["refs"].append(weakref.ref(d))
        return d

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, lambda x: x)

    def walk(self, loss, custom_saved=False):
        """Name the autograd node + attribute that keeps each saved storage; drop the
        records whose saving nodes died during the forward (graph branches that do not
        reach the loss, e.g. no-grad routing math).  custom_saved also reads the
        saved_tensors of nodes without _saved_* attributes (custom autograd Functions)."""
        for ptr in list(self.records):
            r = self.records[ptr]
            if not any(w() is not None for w in r["refs"]):
                self.dead.append(self.records.pop(ptr))
        seen, stack = set(), [loss.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            vals = []
            for attr in dir(fn):
                if attr.startswith("_saved_"):
                    try:
                        vals.append((attr[7:], getattr(fn, attr)))
                    except Exception:  # noqa: BLE001
                        pass
            if custom_saved and hasattr(fn, "saved_tensors") and not any(a.startswith("_saved_") for a in dir(fn)):
                try:
                    for j, t in enumerate(fn.saved_tensors):
                        vals.append(("saved[%d]" % j, t))
                except Exception:  # noqa: BLE001
                    pass
            for attr, v in vals:
                items = v if isinstance(v, (list, tuple)) else [v]
                for t in items:
                    if isinstance(t, torch.Tensor):
                        ptr, _ = storage(t)
                        if ptr in self.records:
                            self.records[ptr]["keepers"].append("%s.%s" % (fn.name(), attr))
            for nxt, _ in fn.next_functions:
                if nxt is not None:
                    stack.append(nxt)

    def remove(self):
        for h in self.handles:
            h.remove()


def live_groups(in_step, upto, rec, saved_phases=("forward",)):
    """The blocks allocated in the step and live after event upto, grouped by (phase, autograd node, op).

    Returns {key: [bytes, count, {size label: count}]}; the label is dtype(shape) when a block in
    saved_phases is the storage of a tensor saved for backward (rec: a tracer's records), else its size."""
    groups = defaultdict(lambda: [0, 0, defaultdict(int)])
    for ptr, n in live_blocks(in_step, upto).items():
        ph, inner, node = describe(n)
        key = (ph or "-", node or "-", inner or "-")
        sz = n.extra_fields.alloc_size
        g = groups[key]
        g[0] += sz
        g[1] += 1
        r = rec.get(ptr)
        if ph in saved_phases and r is not None and r["nbytes"] == sz:
            g[2]["%s%s" % (r["dtype"], fmt_shape(r["shape"]))] += 1
        else:
            g[2]["%dB" % sz] += 1
    return groups


def print_groups(P, groups, widths=(9, 34, 28)):
    """live_groups() largest first, one line each; widths: the phase, node and op columns."""
    wp, wn, wo = widths
    for key, (nb, cnt, sizes) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        sz = ", ".join("%s x%d" % (k, v) if v > 1 else k for k, v in
                       sorted(sizes.items(), key=lambda kv: -kv[1])[:6])
        if len(sizes) > 6:
            sz += ", ..."
        P("  %10d x%-3d %-*s %-*s %-*s %s" % (nb, cnt, wp, key[0], wn, key[1][:wn], wo, key[2][:wo], sz))


def merge_results(out_path, trace_path, lines, traces, names, sep):
    """--merge: replace in the existing JSONL and trace files only the cases just run, in the order of `names`.

    Each trace block starts with `sep` and a line whose second word is the case name."""
    import json
    import os
    old_l, old_t = {}, {}
    if os.path.exists(out_path):
        for ln in open(out_path):
            if ln.strip():
                old_l[json.loads(ln)["name"]] = ln.strip()
    if os.path.exists(trace_path):
        for blk in open(trace_path).read().split(sep + "\n")[1:]:
            old_t[blk.split()[1]] = sep + "\n" + blk.rstrip("\n")
    for ln in lines:
        old_l[json.loads(ln)["name"]] = ln
    for t in traces:
        old_t[t.split("\n")[1].split()[1]] = t
    key = lambda n: names.index(n) if n in names else len(names)  # noqa: E731
    return ([old_l[n] for n in sorted(old_l, key=key)], [old_t[n] for n in sorted(old_t, key=key)])
