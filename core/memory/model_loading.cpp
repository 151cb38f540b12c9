#include "memory/model_loading.hpp"

#include <algorithm>
#include <string>

#include "memory/memory_common.hpp"
#include "setup/frameworks.hpp"

namespace vramcalc {

namespace {

constexpr std::uint64_t kGiB = 1024 * kMiB;

// The allocation sequence being written: tensors get dense ids in allocation order.
class Events {
public:
    std::uint32_t allocate(std::uint64_t bytes) {
        list.push_back({AllocOp::allocate, 0, next_, std::max<std::uint64_t>(bytes, 1), 0});
        return next_++;
    }
    void free(std::uint32_t tensor) { list.push_back({AllocOp::free, 0, tensor, 0, 0}); }
    void empty_cache() { list.push_back({AllocOp::empty_cache, 0, 0, 0, 0}); }
    std::vector<AllocEvent> list;

private:
    std::uint32_t next_ = 0;
};

std::uint64_t blocks(std::uint64_t n, std::uint64_t size) { return (n + size - 1) / size; }

// bitsandbytes' 4-bit quantization of one weight already on the GPU as `source`, nf4 with double quantization
// (nn/modules.py Params4bit._quantize, functional.py quantize_4bit and quantize_blockwise, backends/cuda/ops.py at
// 0.49.2): absmax (fp32 per 64 elements) and the packed output, the code table and offset, from 0.46 a temporary of
// absmax less its mean, the nested absmax (fp32 per 256 blocks) and the quantized absmax (uint8 per block), a copy
// of the nested code; then the temporaries and the 16-bit source are freed.
void bitsandbytes_quantize(Events& e, std::uint32_t source, std::uint64_t n, bool offset_temporary) {
    const std::uint64_t nb = blocks(n, 64), ns = blocks(nb, 256);
    const std::uint32_t absmax = e.allocate(4 * nb);
    e.allocate((n + 1) / 2);  // packed
    e.allocate(64);           // the NF4 code
    e.allocate(4);            // offset: absmax.mean()
    const std::uint32_t centred = offset_temporary ? e.allocate(4 * nb) : 0;
    e.allocate(4 * ns);  // nested absmax
    e.allocate(nb);      // quantized absmax
    e.allocate(1024);    // the nested code's copy
    if (offset_temporary) e.free(centred);
    e.free(absmax);
    e.free(source);
}

// The nearest of the 16 NF4 codes for `span` elements: |w - code| (bf16, 16 per element) and its abs, the minimum's
// values and int64 indices. Returns the indices; the rest is freed.
std::uint32_t nearest_codes(Events& e, std::uint64_t span) {
    const std::uint32_t difference = e.allocate(32 * span), distance = e.allocate(32 * span);
    e.free(difference);
    const std::uint32_t values = e.allocate(2 * span), indices = e.allocate(8 * span);
    e.free(distance);
    e.free(values);
    return indices;
}

// torchao's NF4Tensor.from_tensor on a bf16 weight of n elements (torchao/dtypes/nf4tensor.py at v0.8.0 and, for
// `whole`, at v0.1): the scalers' double quantization over |w| (a 2n temporary, then per-block bf16 arithmetic),
// |w| again for the block maxima, the scaled blocks (2n); the nearest of the 16 NF4 codes, searched per 2^20
// elements into n uint8 (two 32 MiB differences, values and int64 indices per chunk), or at v0.1 over the whole
// weight at once (|w - code| as 32n, its abs another 32n, the minimum's values 2n and int64 indices 8n, which are
// the codes), then packed two to a byte (v0.1 through int64 shifts of 4n each). Returns the tensors it keeps.
std::vector<std::uint32_t> torchao_to_nf4(Events& e, std::uint64_t n, bool whole) {
    const std::uint64_t nb = blocks(n, 64), ns = blocks(nb, 256);
    std::vector<std::uint32_t> kept;
    const std::uint32_t magnitudes = e.allocate(2 * n);
    e.free(e.allocate(8 * nb));  // argmax indices
    std::uint32_t chain = e.allocate(2 * nb);  // block maxima, then the scalers' bf16 arithmetic, one op at a time
    for (int op = 0; op < 8; ++op) {
        const std::uint32_t next = e.allocate(2 * nb);
        e.free(chain);
        chain = next;
    }
    e.free(chain);
    kept.push_back(e.allocate(nb));  // quantized scalers (int8)
    // The quantization factor: at v0.1 a column view of 256 / (2 absmax) taken over the expanded absmax, which keeps
    // that whole per-block tensor alive.
    kept.push_back(e.allocate(whole ? 2 * nb : 2 * ns));
    e.free(magnitudes);
    const std::uint32_t again = e.allocate(2 * n);
    if (whole) e.free(again);  // freed inside get_block_absmax at v0.1, after the scaled blocks from v0.3 on
    const std::uint32_t scaled = e.allocate(2 * n);
    if (!whole) e.free(again);
    if (whole) {
        const std::uint32_t codes = nearest_codes(e, n);
        e.free(scaled);
        const std::uint32_t shifted = e.allocate(4 * n), combined = e.allocate(4 * n);
        e.free(shifted);
        kept.push_back(e.allocate((n + 1) / 2));  // the packed data
        e.free(combined);
        e.free(codes);
        return kept;
    }
    const std::uint32_t codes = e.allocate(n);
    e.free(nearest_codes(e, std::min<std::uint64_t>(n, std::uint64_t(1) << 20)));  // every chunk reuses the first's blocks
    e.free(scaled);
    const std::uint32_t shifted = e.allocate((n + 1) / 2);
    kept.push_back(e.allocate((n + 1) / 2));  // the packed data
    e.free(shifted);
    e.free(codes);
    return kept;
}

// One entry of the model as its loading meets it: the elements of one weight, and whether QLoRA quantizes it.
struct Weight {
    std::uint64_t n;
    bool quantized;
};

// The layers' linear weights in each layer's module order, `mlp_first` as a sorted checkpoint lists them
// ("mlp." before "self_attn."); the embedding, the norms and an untied head around them.
std::vector<Weight> weights(const Step& c, bool head_first, bool mlp_first) {
    const Architecture& a = c.model;
    std::vector<Weight> out;
    const std::uint64_t head = lm_head_params(a);
    const bool head_quantized = c.finetune.quantize_lm_head;
    if (head && head_first) out.push_back({head, head_quantized});
    out.push_back({embedding_params(a), false});
    std::vector<Linear> layer = mlp_first ? c.mlp_linears() : c.attention_linears();
    const std::vector<Linear>& rest = mlp_first ? c.attention_linears() : c.mlp_linears();
    layer.insert(layer.end(), rest.begin(), rest.end());
    // The layers' norms and biases, small beside the linears, as one tensor per layer.
    const std::uint64_t small = total_params(a) - linear_weight_params(a) - embedding_params(a) - head - a.hidden;
    for (std::uint64_t i = 0; i < a.layers; ++i) {
        out.push_back({small / a.layers + (i < small % a.layers), false});
        for (const Linear& l : layer)
            if (l.layers == 0 || i < l.layers)
                for (std::uint64_t k = 0; k < l.count; ++k) out.push_back({l.in * l.out, true});
    }
    out.push_back({a.hidden, false});  // the final norm
    if (head && !head_first) out.push_back({head, head_quantized});
    return out;
}

// transformers 5.18 from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True)):
// caching_allocator_warmup (modeling_utils.py) allocates the model's loaded bytes at once — half a byte per 4-bit
// element (param_element_size), two per 16-bit one, at most the card less 1.2 GiB — and frees them, leaving one
// cached segment; the checkpoint's tensors then arrive one at a time in sorted key order (core_model_loading.py),
// each 4-bit one as its bf16 weight, quantized and freed (quantizer_bnb_4bit.py). PEFT's
// prepare_model_for_kbit_training (utils/other.py, peft 0.21) then casts every other parameter to fp32 under mixed
// precision, a new allocation each, and calls empty_cache() (peft 0.20 and later).
void transformers_bitsandbytes(const Step& c, Events& e) {
    const std::vector<Weight> model = weights(c, true, true);
    std::uint64_t loaded = 0;
    for (const Weight& w : model) loaded += w.quantized ? w.n / 2 : 2 * w.n;
    const std::uint64_t card = std::uint64_t(c.gpu.memory_gib * double(kGiB));
    const std::uint64_t warmup = std::min(loaded, card > 6 * kGiB / 5 ? card - 6 * kGiB / 5 : 0);
    if (warmup) e.free(e.allocate(warmup));
    const bool offset_temporary = c.finetune.backend_version.empty() || compare_releases(c.finetune.backend_version, "0.46") >= 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> kept_16bit;
    for (const Weight& w : model) {
        const std::uint32_t t = e.allocate(2 * w.n);
        if (w.quantized) bitsandbytes_quantize(e, t, w.n, offset_temporary);
        else kept_16bit.push_back({t, w.n});
    }
    if (!detail::mixed(c)) return;
    for (const auto& [t, n] : kept_16bit) {
        e.allocate(4 * n);
        e.free(t);
    }
    e.empty_cache();
}

// torchtune's QLoRA recipes (recipes/lora_finetune_single_device.py, v0.1.0-v0.6.1) build the model on the GPU under
// bf16, every linear of the layers an NF4 LoRALinear or FrozenNF4Linear that quantizes its freshly initialised bf16
// weight and frees it (modules/peft/lora.py, modules/low_precision/nf4_linear.py), in module order; then
// load_state_dict copies the CPU checkpoint in: each NF4 weight goes to the GPU in bf16 and through from_tensor
// again. torchtune 0.1's NF4 copy_ (utils/_register_nf4_dispatch_ops.py) puts the new tensors in place of the old,
// which are freed; torchao's own from 0.3 copies the new ones into the old and frees them. No empty_cache().
void torchtune_nf4(const Step& c, Events& e, bool whole) {
    const std::vector<Weight> model = weights(c, false, false);
    std::vector<std::vector<std::uint32_t>> quantized;
    for (const Weight& w : model) {
        const std::uint32_t t = e.allocate(2 * w.n);
        if (!w.quantized) continue;
        quantized.push_back(torchao_to_nf4(e, w.n, whole));
        e.free(t);
    }
    std::size_t i = 0;
    for (const Weight& w : model) {
        if (!w.quantized) continue;
        const std::uint32_t in = e.allocate(2 * w.n);
        std::vector<std::uint32_t> fresh = torchao_to_nf4(e, w.n, whole);
        for (std::uint32_t t : whole ? quantized[i] : fresh) e.free(t);
        e.free(in);
        ++i;
    }
}

}  // namespace

std::vector<AllocEvent> model_loading_events(const Step& c) {
    if (c.finetune.method != FinetuneMethod::qlora || c.device != Device::cuda) return {};
    // One GPU holds the whole model: a sharded or split model loads differently (not replayed).
    if (c.tp != 1 || c.pp != 1 || detail::shards_params(c) || is_moe(c.model)) return {};
    Events e;
    switch (c.framework->loading) {
        case ModelLoading::in_place: return {};
        case ModelLoading::transformers:
            if (c.finetune.backend != QuantBackend::bitsandbytes) return {};
            transformers_bitsandbytes(c, e);
            break;
        case ModelLoading::torchtune_nf4: torchtune_nf4(c, e, false); break;
        case ModelLoading::torchtune_nf4_whole: torchtune_nf4(c, e, true); break;
    }
    return std::move(e.list);
}

std::optional<LoadedModel> loaded_model(const Step& c) {
    if (c.finetune.method != FinetuneMethod::qlora) return std::nullopt;  // the common case, at once
    const std::vector<AllocEvent> events = model_loading_events(c);
    if (events.empty()) return std::nullopt;
    const std::uint64_t card = std::uint64_t(c.gpu.memory_gib * double(kGiB));
    const DeviceMemory device{card - std::min(card, std::uint64_t(cuda_context_bytes(c))), card};
    // The replay takes about a millisecond, and a report estimates one model many times (the largest micro-batch,
    // the suggestions, the plans): the last few loadings are kept, by their events, the device and the options.
    struct Kept {
        std::vector<AllocEvent> events;
        std::uint64_t capacity;
        std::string alloc_conf;
        LoadedModel loaded;
    };
    static std::vector<Kept> recent;
    const auto same = [](const AllocEvent& a, const AllocEvent& b) {
        return a.op == b.op && a.tensor == b.tensor && a.bytes == b.bytes;
    };
    for (const Kept& k : recent)
        if (k.capacity == device.capacity && k.alloc_conf == c.alloc_conf &&
            std::equal(events.begin(), events.end(), k.events.begin(), k.events.end(), same))
            return k.loaded;
    std::vector<FieldError> ignored;  // the configuration reader checked it
    const AllocConf conf = parse_alloc_conf(c.alloc_conf, torch_release(c.torch), ignored).value_or(AllocConf{});
    const ReplayResult r = replay_caching_allocator(events, conf, device);
    // A load that runs out of memory leaves the step nothing: what it asked for on top of what was reserved.
    const LoadedModel loaded = r.failure ? LoadedModel{r.failure->reserved + r.failure->bytes, r.failure->allocated}
                                         : LoadedModel{r.stats.reserved, r.stats.allocated};
    if (recent.size() == 8) recent.erase(recent.begin());
    recent.push_back({events, device.capacity, c.alloc_conf, loaded});
    return loaded;
}

}  // namespace vramcalc
