#include "setup/config_json.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "input/json_reader.hpp"
#include "input/json_text.hpp"
#include "model/hf_config.hpp"
#include "model/model_catalog.hpp"
#include "hardware/gpus.hpp"
#include "model/presets.hpp"
#include "setup/config_checks.hpp"
#include "setup/method_json.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

const Names<Precision, 7> kPrecision{{{Precision::fp32_true, "32-true"},
                                      {Precision::bf16_mixed, "bf16-mixed"},
                                      {Precision::fp16_mixed, "16-mixed"},
                                      {Precision::bf16_true, "bf16-true"},
                                      {Precision::fp16_true, "16-true"},
                                      {Precision::bf16_base_mixed, "bf16-base-mixed"},
                                      {Precision::fp16_base_mixed, "16-base-mixed"}}};
const Names<Optimizer, 8> kOptimizer{{{Optimizer::adamw, "adamw"},
                                      {Optimizer::paged_adamw, "paged-adamw"},
                                      {Optimizer::paged_adamw_8bit, "paged-adamw-8bit"},
                                      {Optimizer::adamw_8bit, "adamw-8bit"},
                                      {Optimizer::adafactor, "adafactor"},
                                      {Optimizer::lion, "lion"},
                                      {Optimizer::sgd, "sgd"},
                                      {Optimizer::sgd_momentum, "sgd-momentum"}}};
const Names<OptimizerImpl, 3> kImpl{{{OptimizerImpl::foreach, "foreach"},
                                     {OptimizerImpl::fused, "fused"},
                                     {OptimizerImpl::single_tensor, "single-tensor"}}};
const Names<Fp8Recipe, 5> kFp8Recipe{{{Fp8Recipe::none, "none"},
                                      {Fp8Recipe::torchao_tensorwise, "torchao-tensorwise"},
                                      {Fp8Recipe::torchao_rowwise, "torchao-rowwise"},
                                      {Fp8Recipe::te_delayed, "te-delayed"},
                                      {Fp8Recipe::te_current, "te-current"}}};
const Names<FinetuneMethod, 3> kMethod{
    {{FinetuneMethod::full, "full"}, {FinetuneMethod::lora, "lora"}, {FinetuneMethod::qlora, "qlora"}}};
const Names<Checkpointing, 4> kCheckpointing{{{Checkpointing::none, "none"},
                                              {Checkpointing::selective, "selective"},
                                              {Checkpointing::selective_op, "selective-op"},
                                              {Checkpointing::full, "full"}}};
const Names<PipelineSchedule, 3> kSchedule{{{PipelineSchedule::one_f_one_b, "1f1b"},
                                            {PipelineSchedule::gpipe, "gpipe"},
                                            {PipelineSchedule::interleaved_1f1b, "interleaved-1f1b"}}};
const Names<QuantBackend, 2> kBackend{{{QuantBackend::bitsandbytes, "bitsandbytes"}, {QuantBackend::torchao, "torchao"}}};
const Names<Attention, 2> kAttention{{{Attention::eager, "eager"}, {Attention::flash, "flash"}}};
const Names<Strategy, 5> kStrategy{{{Strategy::single, "single"},
                                    {Strategy::ddp, "ddp"},
                                    {Strategy::deepspeed, "deepspeed"},
                                    {Strategy::fsdp, "fsdp"},
                                    {Strategy::megatron, "megatron"}}};
const Names<Offload, 3> kOffload{
    {{Offload::none, "none"}, {Offload::optimizer, "optimizer"}, {Offload::optimizer_and_params, "optimizer+params"}}};
const Names<Device, 2> kDevice{{{Device::cuda, "cuda"}, {Device::cpu, "cpu"}}};
const Names<TorchVersion, 2> kTorch{{{TorchVersion::v2, "2"}, {TorchVersion::v1_13, "1.13"}}};
const Names<Loss, 4> kLoss{
    {{Loss::full, "full"}, {Loss::chunked, "chunked"}, {Loss::fused, "fused"}, {Loss::fused_linear, "fused-linear"}}};
const Names<AdapterDtype, 2> kAdapterDtype{{{AdapterDtype::fp32, "fp32"}, {AdapterDtype::base, "base"}}};
const Names<FsdpWrap, 2> kFsdpWrap{{{FsdpWrap::adapters_apart, "adapters-apart"}, {FsdpWrap::layers, "layers"}}};
const Names<Mlp, 3> kMlp{{{Mlp::swiglu, "swiglu"}, {Mlp::geglu, "geglu"}, {Mlp::gelu, "gelu"}}};
const Names<Norm, 2> kNorm{{{Norm::rmsnorm, "rmsnorm"}, {Norm::layernorm, "layernorm"}}};
const Names<Position, 4> kPosition{
    {{Position::rope, "rope"}, {Position::learned, "learned"}, {Position::alibi, "alibi"}, {Position::none, "none"}}};
const Names<QkNorm, 3> kQkNorm{{{QkNorm::none, "none"}, {QkNorm::per_head, "per_head"}, {QkNorm::full, "full"}}};

// The explicit architecture's keys, read and written from one table. Required keys first.
struct IntField { const char* key; std::uint64_t Architecture::*member; std::uint64_t lo, hi; };
struct BoolField { const char* key; bool Architecture::*member; };
struct RealField { const char* key; double Architecture::*member; double lo, hi; bool hi_open; };
const IntField kIntFields[] = {
    {"layers", &Architecture::layers, 1, kMaxLayers},     {"hidden", &Architecture::hidden, 1, kMaxWidth},
    {"heads", &Architecture::heads, 1, kMaxWidth},        {"ffn", &Architecture::ffn, 1, kMaxWidth * 4},
    {"vocab", &Architecture::vocab, 1, kMaxVocab},        {"kv_heads", &Architecture::kv_heads, 1, kMaxWidth},
    {"head_dim", &Architecture::head_dim, 1, kMaxWidth},  {"max_positions", &Architecture::max_positions, 1, kMaxTokens},
    {"norms_per_layer", &Architecture::norms_per_layer, 1, 4},
    {"position_offset", &Architecture::position_offset, 0, 1024},
    {"embed_dim", &Architecture::embed_dim, 1, kMaxWidth},
    {"sliding_window", &Architecture::sliding_window, 1, kMaxTokens},
    {"sliding_layers", &Architecture::sliding_layers, 0, kMaxLayers},
    {"q_lora_rank", &Architecture::q_lora_rank, 1, kMaxWidth}, {"kv_lora_rank", &Architecture::kv_lora_rank, 1, kMaxWidth},
    {"qk_nope_dim", &Architecture::qk_nope_dim, 1, kMaxWidth}, {"qk_rope_dim", &Architecture::qk_rope_dim, 1, kMaxWidth},
    {"v_head_dim", &Architecture::v_head_dim, 1, kMaxWidth},
    {"experts", &Architecture::experts, 1, 4096},         {"experts_per_token", &Architecture::experts_per_token, 1, 4096},
    {"moe_ffn", &Architecture::moe_ffn, 1, kMaxWidth * 4}, {"shared_experts", &Architecture::shared_experts, 0, 1024},
    {"shared_ffn", &Architecture::shared_ffn, 1, kMaxWidth * 4}, {"dense_layers", &Architecture::dense_layers, 0, kMaxLayers},
};
constexpr std::size_t kRequired = 5;
const BoolField kBoolFields[] = {
    {"tied_embeddings", &Architecture::tied_embeddings}, {"attention_bias", &Architecture::attention_bias},
    {"qkv_bias", &Architecture::qkv_bias},               {"mlp_bias", &Architecture::mlp_bias},
    {"lm_head_bias", &Architecture::lm_head_bias},       {"norm_weight", &Architecture::norm_weight},
    {"norm_bias", &Architecture::norm_bias},             {"parallel_block", &Architecture::parallel_block},
    {"embedding_norm", &Architecture::embedding_norm},   {"attention_sinks", &Architecture::attention_sinks},
    {"scaled_logits", &Architecture::scaled_logits},     {"shared_expert_gate", &Architecture::shared_expert_gate},
    {"router_bias", &Architecture::router_bias},         {"expert_bias", &Architecture::expert_bias},
    {"router_logits_kept", &Architecture::router_logits_kept},
};
const RealField kRealFields[] = {
    {"residual_dropout", &Architecture::residual_dropout, 0, 1, true},
    {"attention_dropout", &Architecture::attention_dropout, 0, 1, true},
    {"embedding_dropout", &Architecture::embedding_dropout, 0, 1, true},
    {"activation_dropout", &Architecture::activation_dropout, 0, 1, true},
    {"attn_softcap", &Architecture::attn_softcap, 0, 1e6, false},
    {"final_softcap", &Architecture::final_softcap, 0, 1e6, false},
};

std::string explicit_keys() {
    std::string s = "family, mlp, activation, norm, position, qk_norm, bias, dropout";
    for (const IntField& f : kIntFields) s += std::string(", ") + f.key;
    for (const BoolField& f : kBoolFields) s += std::string(", ") + f.key;
    for (const RealField& f : kRealFields) s += std::string(", ") + f.key;
    return s;
}

std::string module_families() {
    std::string s;
    for (const Family& f : family_rows()) s += (s.empty() ? "\"" : ", \"") + std::string(f.model_type) + "\"";
    return s;
}

void read_explicit_architecture(const json& obj, Architecture& a, const std::string& field, std::vector<FieldError>& errors) {
    Reader r(obj, field + ".", errors);
    for (std::size_t i = 0; i < kRequired; ++i)
        if (!r.has(kIntFields[i].key)) r.fail(kIntFields[i].key, "is required in an explicit architecture");
    a = Architecture{};
    a.id = "custom";
    r.integer("heads", a.heads, 1, kMaxWidth);
    a.kv_heads = a.heads;
    for (const IntField& f : kIntFields) r.integer(f.key, a.*f.member, f.lo, f.hi);
    if (const json* v = r.find("family")) {
        const std::string s = v->is_string() ? v->get<std::string>() : "";
        if (const Family* f = find_family_row(s))
            a.family = f;
        else
            r.fail("family", "must be one of " + module_families() + " (module names and modeling code), got " + show(*v));
    }
    r.choice("mlp", a.mlp, kMlp);
    a.activation = a.mlp == Mlp::swiglu ? Activation::silu : a.mlp == Mlp::geglu ? Activation::gelu_tanh : Activation::gelu;
    if (const json* v = r.find("activation")) {
        const ActivationCost* c = v->is_string() ? find_activation(v->get<std::string>()) : nullptr;
        if (c) a.activation = c->id;
        else r.fail("activation", "must be one of " + activation_names() + ", got " + show(*v));
    }
    r.choice("norm", a.norm, kNorm);
    r.choice("position", a.position, kPosition);
    r.choice("qk_norm", a.qk_norm, kQkNorm);
    bool bias = false;
    if (r.has("bias")) {
        r.boolean("bias", bias);
        a.attention_bias = a.mlp_bias = bias;
    }
    double dropout = 0;
    if (r.has("dropout")) {
        r.number("dropout", dropout, 0.0, 1.0, true);
        a.set_dropout(dropout);
    }
    for (const BoolField& f : kBoolFields) r.boolean(f.key, a.*f.member);
    for (const RealField& f : kRealFields) r.number(f.key, a.*f.member, f.lo, f.hi, f.hi_open);
    r.reject_unknown(explicit_keys());
}

void read_finetune(const json* v, Config& c, std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string() && v->get_ref<const std::string&>() == "full") {
        c.finetune.method = FinetuneMethod::full;
        return;
    }
    if (!v->is_object()) {
        errors.push_back({"finetune", "must be \"full\" or {\"method\":\"lora\"|\"qlora\",\"rank\":8,\"targets\":[...]}"});
        return;
    }
    Reader r(*v, "finetune.", errors);
    if (!r.has("method")) r.fail("method", "is required: \"lora\" or \"qlora\"");
    r.choice("method", c.finetune.method, kMethod);
    r.integer("rank", c.finetune.rank, 1, 65536);
    r.number("dropout", c.finetune.dropout, 0.0, 1.0, true);
    r.boolean("double_quant", c.finetune.double_quant);
    r.boolean("quantize_lm_head", c.finetune.quantize_lm_head);
    r.choice("backend", c.finetune.backend, kBackend);
    if (const json* bv = r.find("backend_version")) {
        if (bv->is_string() && bv->get_ref<const std::string&>().size() <= 32 && is_release(bv->get<std::string>()))
            c.finetune.backend_version = bv->get<std::string>();
        else
            r.fail("backend_version", "must be the back end's release, e.g. \"0.41.1\", got " + show(*bv));
    }
    // Module names depend on the model (check_consistency checks them against its projections).
    if (const json* t = r.find("targets")) {
        if (!t->is_array() || t->empty() || t->size() > 64) {
            r.fail("targets", "must be a non-empty array of the model's module names (e.g. q_proj, v_proj) or all-linear");
        } else {
            c.finetune.targets.clear();
            for (const json& name : *t) {
                if (name.is_string() && !name.get_ref<const std::string&>().empty() && name.get_ref<const std::string&>().size() <= 64)
                    c.finetune.targets.push_back(name.get<std::string>());
                else
                    r.fail("targets", "module names are strings of 1 to 64 characters, got " + show(name));
            }
        }
    }
    r.reject_unknown("method, rank, targets, dropout, double_quant, quantize_lm_head, backend, backend_version");
}

void read_gpu(const json* v, Config& c, std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string()) {
        if (const Gpu* g = find_gpu(v->get<std::string>())) {
            c.gpu = *g;
            return;
        }
        std::string ids;
        for (const Gpu& g : gpu_catalog()) ids += (ids.empty() ? "" : ", ") + g.id;
        errors.push_back({"gpu", "unknown GPU " + show(*v) + "; catalog: " + ids});
    } else if (v->is_object()) {
        Reader r(*v, "gpu.", errors);
        c.gpu = Gpu{"custom", "Custom GPU", 0, 0, 0, 0, 0, 0, 0, 0};
        if (const json* n = r.find("name")) {
            if (n->is_string() && n->get_ref<const std::string&>().size() <= 100)
                c.gpu.name = n->get<std::string>();
            else
                r.fail("name", "must be a string of at most 100 characters");
        }
        if (!r.has("memory_gib")) r.fail("memory_gib", "is required for a custom GPU");
        r.number("memory_gib", c.gpu.memory_gib, 0.0625, 1 << 20, false);
        // Optional, for the step time: dense TFLOP/s and GB/s as in the catalog.
        r.number("bf16_tflops", c.gpu.bf16_tflops, 0, 1e6, false);
        c.gpu.fp16_tflops = c.gpu.bf16_tflops;
        r.number("fp16_tflops", c.gpu.fp16_tflops, 0, 1e6, false);
        r.number("fp32_tflops", c.gpu.fp32_tflops, 0, 1e6, false);
        r.number("bandwidth_gbps", c.gpu.bandwidth_gbps, 0, 1e6, false);
        r.number("link_gbps", c.gpu.link_gbps, 0, 1e6, false);
        r.number("pcie_gbps", c.gpu.pcie_gbps, 0, 1e6, false);
        r.reject_unknown("name, memory_gib, bf16_tflops, fp16_tflops, fp32_tflops, bandwidth_gbps, link_gbps, pcie_gbps");
    } else {
        errors.push_back({"gpu", "must be a catalog id or {\"name\", \"memory_gib\"}, got " + show(*v)});
    }
}

}  // namespace

void read_model(const json* v, Architecture& a, const std::string& field, std::vector<std::string>& notes,
                std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string()) {
        const std::string id = v->get<std::string>();
        if (const ModelPreset* p = find_model_preset(id)) {
            a = p->arch;
        } else if (const CatalogModel* m = find_catalog_model(id)) {
            read_hf_config(json::parse(m->config), a, field + ".", errors, notes);
            a.id = m->id;
        } else {
            std::string ids;
            for (const ModelPreset& m : model_presets()) ids += (ids.empty() ? "" : ", ") + m.arch.id;
            errors.push_back({field, "unknown model " + show(*v) + "; presets: " + ids + ", or one of the " +
                                         std::to_string(model_catalog().size()) +
                                         " Hugging Face ids of the catalog (vramcalc presets), or {\"hf_config\": {...}}"});
        }
    } else if (v->is_object() && v->contains("hf_config")) {
        if (v->size() != 1) errors.push_back({field, "an hf_config object takes no other keys"});
        read_hf_config((*v)["hf_config"], a, field + ".hf_config.", errors, notes);
    } else if (v->is_object()) {
        read_explicit_architecture(*v, a, field, errors);
    } else {
        errors.push_back({field, "must be a preset id, {\"hf_config\": {...}} or an architecture object, got " + show(*v)});
    }
}

json model_to_json(const Architecture& a) { return a.id == "custom" ? architecture_to_json(a) : json(a.id); }

const char* to_string(Precision e) { return kPrecision.name(e); }
const char* to_string(Optimizer e) { return kOptimizer.name(e); }
const char* to_string(OptimizerImpl e) { return kImpl.name(e); }
const char* to_string(FinetuneMethod e) { return kMethod.name(e); }
const char* to_string(Fp8Recipe e) { return kFp8Recipe.name(e); }
const char* to_string(Checkpointing e) { return kCheckpointing.name(e); }
const char* to_string(Attention e) { return kAttention.name(e); }
const char* to_string(Strategy e) { return kStrategy.name(e); }
const char* to_string(Offload e) { return kOffload.name(e); }
const char* to_string(Device e) { return kDevice.name(e); }
const char* to_string(TorchVersion e) { return kTorch.name(e); }
const char* to_string(Loss e) { return kLoss.name(e); }
const char* to_string(AdapterDtype e) { return kAdapterDtype.name(e); }
const char* to_string(PipelineSchedule e) { return kSchedule.name(e); }
const char* to_string(QuantBackend e) { return kBackend.name(e); }

ParsedConfig parse_config(const json& v) {
    ParsedConfig out;
    Config& c = out.config;
    auto& errors = out.errors;
    c.model = find_model_preset("llama-2-7b")->arch;
    c.gpu = *find_gpu("a100-80gb");
    if (!v.is_object()) {
        errors.push_back({"", "the configuration must be a JSON object, got " + show(v)});
        return out;
    }
    Reader r(v, "", errors);
    // The framework first: its profile gives the other keys their defaults.
    const FrameworkProfile* profile = &framework_profile(Framework::hf);
    if (const json* f = r.find("framework")) {
        profile = f->is_string() ? find_framework(f->get<std::string>()) : nullptr;
        if (!profile) {
            std::string names;
            for (const FrameworkProfile& p : framework_profiles()) names += (names.empty() ? "\"" : ", \"") + std::string(p.name) + "\"";
            errors.push_back({"framework", "must be one of " + names + ", got " + show(*f)});
            profile = &framework_profile(Framework::hf);
        }
    }
    if (const json* fv = r.find("framework_version")) {
        const FrameworkProfile* revision = nullptr;
        if (fv->is_string() && fv->get_ref<const std::string&>().size() <= 32) revision = framework_revision(*profile, fv->get<std::string>());
        if (revision) {
            profile = revision, c.framework_version = fv->get<std::string>();
        } else {
            std::string revisions;
            for (const FrameworkProfile& p : framework_profiles())
                if (p.id == profile->id && *p.since_date)
                    revisions += (revisions.empty() ? "" : ", ") + std::string(p.since_release) + " (" + p.since_date + ")";
            r.fail("framework_version", "must be a release (\"0.3.1\") or a date (\"2024-05-20\")" +
                                            (revisions.empty() ? std::string() : "; " + std::string(profile->name) + " changes at " + revisions) +
                                            ", got " + show(*fv));
        }
    }
    c.framework = profile;
    for (auto& [p, name] : kPrecision.items)
        if (std::string(name) == profile->precision) c.precision = p;
    c.loss = profile->loss, c.loss_chunks = profile->loss_chunks, c.adapter_dtype = profile->adapter_dtype;
    c.fsdp_version = profile->fsdp_version, c.fsdp_wrap = profile->fsdp_wrap;
    c.longest_batch_first = profile->longest_batch_first;
    read_model(r.find("model"), c.model, "model", c.notes, errors);
    if (*profile->modules) c.model.family = find_family_row(profile->modules);  // the stack's own model code
    const bool seq_len_given = v.contains("seq_len");
    r.integer("seq_len", c.seq_len, 1, kMaxTokens);
    r.integer("micro_batch", c.micro_batch, 1, kMaxBatch);
    r.integer("grad_accum", c.grad_accum, 1, kMaxBatch);
    // "fp8": bf16 mixed precision whose linears compute in float8 (fp8_recipe says how; torchao tensorwise by default).
    const json* precision = v.is_object() && v.contains("precision") ? &v["precision"] : nullptr;
    const bool fp8 = precision && precision->is_string() && precision->get<std::string>() == "fp8";
    if (fp8) r.find("precision"), c.precision = Precision::bf16_mixed;
    else r.choice("precision", c.precision, kPrecision);
    r.choice("fp8_recipe", c.fp8_recipe, kFp8Recipe);
    if (fp8 && c.fp8_recipe == Fp8Recipe::none) c.fp8_recipe = Fp8Recipe::torchao_tensorwise;
    if (!fp8 && c.fp8_recipe != Fp8Recipe::none) r.fail("fp8_recipe", "goes with \"precision\": \"fp8\"");
    r.choice("optimizer", c.optimizer, kOptimizer);
    r.choice("optimizer_impl", c.optimizer_impl, kImpl);
    read_finetune(r.find("finetune"), c, errors);
    // "checkpointing": a mode, or {"mode": "layers", "every": N} (full checkpointing of every N-th layer).
    if (const json* ck = v.is_object() ? (v.contains("checkpointing") ? &v["checkpointing"] : nullptr) : nullptr;
        ck && ck->is_object()) {
        r.find("checkpointing");
        Reader cr(*ck, "checkpointing.", errors);
        const json* mode = cr.find("mode");
        if (!mode || !mode->is_string() || mode->get<std::string>() != "layers")
            cr.fail("mode", "must be \"layers\" (or give checkpointing as " + kCheckpointing.list() + ")");
        if (!ck->contains("every")) cr.fail("every", "is required: checkpoint every N-th layer");
        cr.integer("every", c.checkpoint_every, 1, kMaxLayers);
        cr.reject_unknown("mode, every");
        c.checkpointing = Checkpointing::full;
    } else {
        r.choice("checkpointing", c.checkpointing, kCheckpointing);
    }
    r.choice("attention", c.attention, kAttention);
    r.choice("strategy", c.strategy, kStrategy);
    r.integer("gpus", c.gpus, 1, kMaxGpus);
    c.zero = c.strategy == Strategy::fsdp ? 3 : 0;  // FSDP's default is FULL_SHARD
    std::uint64_t zero = std::uint64_t(c.zero);
    r.integer("zero", zero, 0, 3);
    c.zero = int(zero);
    r.integer("tp", c.tp, 1, 1024);
    r.integer("pp", c.pp, 1, 1024);
    r.integer("cp", c.cp, 1, 1024);
    // PyTorch's tensor parallelism (torchtitan) runs the norms on sequence shards and the loss on vocabulary
    // shards; Megatron-LM's sequence parallelism is a flag of its own.
    c.sequence_parallel = (c.strategy == Strategy::fsdp || c.strategy == Strategy::ddp) && c.tp > 1;
    r.boolean("sequence_parallel", c.sequence_parallel);
    r.boolean("loss_parallel", c.loss_parallel);
    r.choice("pp_schedule", c.pp_schedule, kSchedule);
    c.pp_stages_per_rank = c.pp_schedule == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    r.integer("pp_stages_per_rank", c.pp_stages_per_rank, 1, 64);
    r.choice("offload", c.offload, kOffload);
    read_gpu(r.find("gpu"), c, errors);
    r.choice("device", c.device, kDevice);
    r.choice("torch", c.torch, kTorch);
    r.choice("loss", c.loss, kLoss);
    // LitGPT's chunks are 128-token blocks (lm_head_chunk_size, chunked_cross_entropy's chunk_size).
    if (profile->loss_chunks == 0)
        c.loss_chunks = std::clamp<std::uint64_t>((c.micro_batch * c.seq_len + 127) / 128, 1, kMaxTokens);
    r.integer("loss_chunks", c.loss_chunks, 1, kMaxTokens);
    c.lm_head_chunks = profile->lm_head_chunks_for_lora && c.finetune.method != FinetuneMethod::full;
    r.boolean("lm_head_chunks", c.lm_head_chunks);
    r.choice("adapter_dtype", c.adapter_dtype, kAdapterDtype);
    r.boolean("optimizer_in_backward", c.optimizer_in_backward);
    r.boolean("activation_offload", c.activation_offload);
    r.boolean("longest_batch_first", c.longest_batch_first);
    r.boolean("compile", c.compile);
    read_training_method(r, c, errors, seq_len_given);
    // Adapters under PEFT (fp32 adapters over bf16 autocast) get its recipe: the frozen base loaded in bf16.
    // (LitGPT's bf16-mixed keeps fp32 weights and base-dtype adapters: its own. PPO loads the value model it trains
    // whole like the policy: not the recipe.)
    if (!v.contains("precision") && c.precision == Precision::bf16_mixed && profile->adapter_dtype == AdapterDtype::fp32 &&
        c.finetune.method != FinetuneMethod::full && adapter_recipe_allowed(c))
        c.precision = Precision::bf16_base_mixed;
    r.integer("gpus_per_node", c.gpus_per_node, 1, 1024);
    r.number("inter_node_gbps", c.inter_node_gbps, 0, 1e6, false);
    r.number("train_tokens", c.train_tokens, 0, 1e18, false);
    r.number("epochs", c.epochs, 0, 1e6, false);
    r.number("dataset_tokens", c.dataset_tokens, 0, 1e18, false);
    r.number("price_per_gpu_hour", c.price_per_gpu_hour, 0, 1e6, false);
    std::uint64_t fsdp_version = std::uint64_t(c.fsdp_version);
    r.integer("fsdp_version", fsdp_version, 1, 2);
    c.fsdp_version = int(fsdp_version);
    r.choice("fsdp_wrap", c.fsdp_wrap, kFsdpWrap);
    r.reject_unknown(key_list({"framework", "framework_version", "model", "seq_len", "micro_batch", "grad_accum", "precision", "optimizer",
                               "optimizer_impl", "finetune", "checkpointing", "attention", "strategy", "gpus", "zero",
                               "tp", "pp", "cp", "sequence_parallel", "loss_parallel", "pp_schedule", "pp_stages_per_rank", "offload", "gpu", "device", "torch", "loss",
                               "loss_chunks", "lm_head_chunks", "adapter_dtype", "optimizer_in_backward", "activation_offload", "longest_batch_first",
                               "compile", "fp8_recipe", "method", "reference", "prompt_len", "completion_len", "num_generations",
                               "inference_engine", "steps_per_generation", "num_iterations", "teacher", "teacher_dtype", "divergence",
                               "rollout_forward_batch", "num_mini_batches", "value_model", "reward_model", "reward_dtype", "gpus_per_node", "inter_node_gbps", "train_tokens", "epochs", "dataset_tokens",
                               "price_per_gpu_hour", "fsdp_version", "fsdp_wrap"}));
    // Without a seq_len, a model with learned positions gets as many as it has.
    if (!seq_len_given && c.model.position == Position::learned) c.seq_len = std::min(c.seq_len, c.model.max_positions);
    if (errors.empty()) check_consistency(c, errors);
    return out;
}

ParsedConfig parse_config(const std::string& text) {
    std::string problem;
    const json v = parse_json_text(text, problem);
    if (!problem.empty()) {
        ParsedConfig out;
        out.errors.push_back({"", problem});
        return out;
    }
    return parse_config(v);
}

json architecture_to_json(const Architecture& a) {
    // The keys the explicit form always shows, then every other field that differs from its default.
    const Architecture d;
    json j = {{"layers", a.layers},
              {"hidden", a.hidden},
              {"heads", a.heads},
              {"kv_heads", a.kv_heads},
              {"ffn", a.ffn},
              {"vocab", a.vocab},
              {"family", a.family->model_type},
              {"mlp", kMlp.name(a.mlp)},
              {"activation", activation_cost(a.activation).name},
              {"norm", kNorm.name(a.norm)},
              {"tied_embeddings", a.tied_embeddings},
              {"position", kPosition.name(a.position)},
              {"max_positions", a.max_positions},
              {"experts", a.experts},
              {"experts_per_token", a.experts_per_token}};
    if (a.attention_bias == a.mlp_bias) j["bias"] = a.attention_bias;
    if (a.residual_dropout == a.attention_dropout && a.attention_dropout == a.embedding_dropout)
        j["dropout"] = a.residual_dropout;
    if (a.qk_norm != d.qk_norm) j["qk_norm"] = kQkNorm.name(a.qk_norm);
    for (const IntField& f : kIntFields)
        if (!j.contains(f.key) && a.*f.member != d.*f.member) j[f.key] = a.*f.member;
    for (const BoolField& f : kBoolFields)
        if (!j.contains(f.key) && a.*f.member != d.*f.member &&
            !(j.contains("bias") && (std::string(f.key) == "attention_bias" || std::string(f.key) == "mlp_bias")))
            j[f.key] = a.*f.member;
    for (const RealField& f : kRealFields) {
        const bool in_dropout = j.contains("dropout") && std::string(f.key) != "activation_dropout" &&
                                std::string(f.key).find("dropout") != std::string::npos;
        if (!in_dropout && a.*f.member != d.*f.member) j[f.key] = a.*f.member;
    }
    return j;
}

json config_to_json(const Config& c) {
    const json model = model_to_json(c.model);
    json finetune = "full";
    if (c.finetune.method != FinetuneMethod::full) {
        finetune = {{"method", to_string(c.finetune.method)}, {"rank", c.finetune.rank}, {"targets", c.finetune.targets},
                    {"dropout", c.finetune.dropout}};
        if (c.finetune.method == FinetuneMethod::qlora) {
            finetune["double_quant"] = c.finetune.double_quant, finetune["quantize_lm_head"] = c.finetune.quantize_lm_head;
            finetune["backend"] = to_string(c.finetune.backend);
            if (!c.finetune.backend_version.empty()) finetune["backend_version"] = c.finetune.backend_version;
        }
    }
    json gpu = c.gpu.id == "custom" ? json{{"name", c.gpu.name}, {"memory_gib", c.gpu.memory_gib}} : json(c.gpu.id);
    if (c.gpu.id == "custom")
        for (const auto& [key, value] : {std::pair<const char*, double>{"bf16_tflops", c.gpu.bf16_tflops},
                                         {"fp16_tflops", c.gpu.fp16_tflops}, {"fp32_tflops", c.gpu.fp32_tflops},
                                         {"bandwidth_gbps", c.gpu.bandwidth_gbps}, {"link_gbps", c.gpu.link_gbps},
                                         {"pcie_gbps", c.gpu.pcie_gbps}})
            if (value > 0) gpu[key] = value;
    json out = {{"framework", c.framework->name},
            {"framework_version", c.framework_version.empty() ? c.framework->since_release : c.framework_version},
            {"model", model},
            {"seq_len", c.seq_len},
            {"micro_batch", c.micro_batch},
            {"grad_accum", c.grad_accum},
            {"precision", to_string(c.precision)},
            {"optimizer", to_string(c.optimizer)},
            {"optimizer_impl", to_string(c.optimizer_impl)},
            {"finetune", finetune},
            {"checkpointing", c.checkpoint_every > 1 ? json{{"mode", "layers"}, {"every", c.checkpoint_every}}
                                                     : json(to_string(c.checkpointing))},
            {"attention", to_string(c.attention)},
            {"strategy", to_string(c.strategy)},
            {"gpus", c.gpus},
            {"zero", c.zero},
            {"tp", c.tp},
            {"pp", c.pp},
            {"cp", c.cp},
            {"sequence_parallel", c.sequence_parallel},
            {"loss_parallel", c.loss_parallel},
            {"pp_schedule", to_string(c.pp_schedule)},
            {"pp_stages_per_rank", c.pp_stages_per_rank},
            {"offload", to_string(c.offload)},
            {"gpu", gpu},
            {"device", to_string(c.device)},
            {"torch", to_string(c.torch)},
            {"loss", to_string(c.loss)},
            {"loss_chunks", c.loss_chunks},
            {"lm_head_chunks", c.lm_head_chunks},
            {"adapter_dtype", to_string(c.adapter_dtype)},
            {"optimizer_in_backward", c.optimizer_in_backward},
            {"activation_offload", c.activation_offload},
            {"longest_batch_first", c.longest_batch_first},
            {"compile", c.compile},
            {"gpus_per_node", c.gpus_per_node},
            {"inter_node_gbps", c.inter_node_gbps},
            {"train_tokens", c.train_tokens},
            {"epochs", c.epochs},
            {"dataset_tokens", c.dataset_tokens},
            {"price_per_gpu_hour", c.price_per_gpu_hour},
            {"fsdp_version", c.fsdp_version},
            {"fsdp_wrap", kFsdpWrap.name(c.fsdp_wrap)}};
    if (c.fp8_recipe != Fp8Recipe::none) out["precision"] = "fp8", out["fp8_recipe"] = to_string(c.fp8_recipe);
    training_method_to_json(c, out);
    return out;
}

json errors_to_json(const std::vector<FieldError>& errors) {
    json list = json::array();
    for (const FieldError& e : errors) list.push_back({{"field", e.field}, {"message", e.message}});
    return {{"errors", list}};
}

}  // namespace vramcalc
