#include "json/report_json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "setup/config_json.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {
std::uint64_t bytes(double b) { return b <= 0 ? 0 : std::uint64_t(std::llround(b)); }
// Seconds, tokens/s and shares to 4 significant digits; null where the GPU's peak is unknown.
json figure(double v, bool known) {
    if (!known) return nullptr;
    char s[32];
    std::snprintf(s, sizeof s, "%.4g", v);
    return std::strtod(s, nullptr);
}
double phase_seconds(const StepTime& t, const std::string& phase) {
    if (phase == "forward") return t.forward;
    if (phase == "loss") return t.loss;
    if (phase == "backward") return t.backward;
    return t.optimizer_step;
}
}  // namespace

json terms_to_json(const Terms& t) {
    return {{"weights", bytes(t.weights)},
            {"gradients", bytes(t.gradients)},
            {"optimizer_states", bytes(t.optimizer_states)},
            {"master_weights", bytes(t.master_weights)},
            {"activations", bytes(t.activations)},
            {"logits", bytes(t.logits)},
            {"temporaries", bytes(t.temporaries)}};
}

json timeline_to_json(const std::vector<Moment>& moments, const MemoryEstimate& m) {
    json out = json::array();
    std::size_t peak = 0;
    for (std::size_t i = 0; i < moments.size(); ++i) {
        const Moment& t = moments[i];
        if (t.terms.sum() > moments[peak].terms.sum()) peak = i;
        out.push_back({{"name", t.name}, {"phase", t.phase}, {"label", t.label},
                       {"allocated_bytes", bytes(t.terms.sum())}, {"per_gpu_bytes", terms_to_json(t.terms)}});
    }
    // Reserved is flat through a steady-state step: the caching allocator keeps its segments from step to step.
    return {{"moments", std::move(out)},
            {"peak_moment", moments.empty() ? "" : std::string(moments[peak].name)},
            {"peak_allocated_bytes", bytes(m.peak_allocated)},
            {"peak_reserved_bytes", bytes(m.peak_reserved)},
            {"cuda_context_bytes", bytes(m.cuda_context)},
            {"nccl_bytes", bytes(m.nccl)},
            {"total_bytes", bytes(m.total)},
            {"capacity_bytes", bytes(m.capacity)}};
}

// The run's hours, GPU-hours and cost where its tokens (and a price) are given.
void run_to_json(const RunCost& run, json& out) {
    if (!run.has_tokens) return;
    out["hours"] = figure(run.hours, true);
    out["gpu_hours"] = figure(run.gpu_hours, true);
    if (run.has_price) out["cost"] = figure(run.cost, true);
}

json plan_to_json(const Plan& p) {
    json changes = json::array();
    for (const PlanChange& c : p.changes)
        changes.push_back({{"change", c.change}, {"config", c.patch}, {"changes_training", c.changes_training}});
    json out = {{"changes", std::move(changes)},
                {"config", config_to_json(p.config)},
                {"fits", p.memory.fits},
                {"total_bytes", bytes(p.memory.total)},
                {"gpus", p.config.gpus},
                {"step_time_s", figure(p.time.step, p.time.known)},
                {"step_time_is_lower_bound", p.time.lower_bound},
                {"tokens_per_s", figure(p.time.tokens_per_s, p.time.known)},
                {"changes_training", p.changes_training}};
    run_to_json(p.run, out);
    return out;
}

json sizing_to_json(const Sizing& s) {
    json options = json::array();
    for (const SizingOption& o : s.options) {
        json j = {{"gpu", o.gpu->id}, {"gpu_name", o.gpu->name}, {"gpus", o.gpus}, {"fits", o.fits},
                  {"plan", o.fits ? plan_to_json(o.plan) : json()}, {"pareto", o.pareto}};
        // Every option says its hours, GPU-hours and cost: null where it does not fit, its step is not timed (no
        // 16-bit peak known, TRL's trainers) or no price is given.
        const RunCost* run = o.fits && o.plan.run.has_tokens ? &o.plan.run : nullptr;
        j["hours"] = run ? figure(run->hours, true) : json();
        j["gpu_hours"] = run ? figure(run->gpu_hours, true) : json();
        j["cost"] = run && run->has_price ? figure(run->cost, true) : json();
        options.push_back(std::move(j));
    }
    return {{"options", std::move(options)}};
}

json report_to_json(const Report& r) {
    const MemoryEstimate& m = r.memory;
    json per_gpu = terms_to_json(m.at_peak());
    per_gpu["cuda_context"] = bytes(m.cuda_context);
    if (m.nccl > 0) per_gpu["nccl_buffers"] = bytes(m.nccl);
    per_gpu["allocator_overhead"] = bytes(m.allocator_overhead);
    if (m.collective_stream_cached > 0) per_gpu["collective_streams_cached"] = bytes(m.collective_stream_cached);
    if (m.paged_optimizer_states > 0) per_gpu["paged_optimizer_states"] = bytes(m.paged_optimizer_states);
    if (m.inference_engine > 0 && m.inference_engine_in_total) per_gpu["inference_engine"] = bytes(m.inference_engine);
    json phases = json::array();
    for (const Phase& p : m.phases)
        phases.push_back({{"name", p.name}, {"allocated_bytes", bytes(p.terms.sum())}, {"per_gpu_bytes", terms_to_json(p.terms)},
                          {"time_s", figure(phase_seconds(r.time, p.name), r.time.known)}});
    json suggestions = json::array();
    for (const Suggestion& s : r.suggestions)
        suggestions.push_back({{"change", s.change}, {"config", s.patch}, {"total_bytes", bytes(s.total)},
                               {"fits", s.fits}, {"why", s.why}, {"step_time_s", figure(s.step_time, s.step_time > 0)},
                               {"step_time_is_lower_bound", s.time_is_bound}});
    const std::uint64_t total = bytes(m.total), capacity = bytes(m.capacity);
    json out = {{"config", config_to_json(r.config)},
            {"parameters", {{"total", bytes(m.params_total)}, {"trainable", bytes(m.params_trainable)}}},
            {"per_gpu_bytes", std::move(per_gpu)},
            {"peak_phase", m.phases[m.peak_phase].name},
            {"phases", std::move(phases)},
            {"peak_allocated_bytes", bytes(m.peak_allocated)},
            {"peak_reserved_bytes", bytes(m.peak_reserved)},
            {"total_bytes", total},
            {"cpu_bytes", bytes(m.cpu)},
            {"gpu", {{"id", r.config.gpu.id}, {"name", r.config.gpu.name}, {"capacity_bytes", capacity}}},
            {"fits", m.fits},
            // What the step can still grow by: the collective streams' cached blocks are released for it.
            {"headroom_bytes", std::int64_t(capacity) - std::int64_t(total) + std::int64_t(bytes(m.collective_stream_cached))},
            {"max_micro_batch", r.max_micro_batch},
            {"sequence_too_long", r.sequence_too_long},
            {"suggestions", r.suggested ? std::move(suggestions) : json(nullptr)},
            {"warnings", r.warnings}};
    if (!m.stage.empty()) out["pipeline_stage"] = m.stage;
    if (m.loading_reserved > 0) out["loading_reserved_bytes"] = bytes(m.loading_reserved);
    // Time and cost (step_time.cpp).
    const StepTime& t = r.time;
    out["step_time_s"] = figure(t.step, t.known);
    out["tokens_per_s"] = figure(t.tokens_per_s, t.known);
    out["tokens_per_s_per_gpu"] = figure(t.tokens_per_s_per_gpu, t.known);
    out["mfu"] = figure(t.mfu, t.known);
    out["step_time_is_lower_bound"] = t.lower_bound;
    if (!t.known) out["step_time_unknown"] = t.unknown_reason;
    out["time"] = {{"compute_s", figure(t.compute, t.known)},
                   {"matmul_s", figure(t.matmul, t.known)},
                   {"attention_s", figure(t.attention, t.known)},
                   {"memory_s", figure(t.memory, t.known)},
                   {"data_parallel_s", figure(t.data_parallel, t.known)},
                   {"tensor_parallel_s", figure(t.tensor_parallel, t.known)},
                   {"exposed_communication_s", figure(t.exposed_communication, t.known)},
                   {"pipeline_bubble_s", figure(t.pipeline_bubble, t.known)},
                   {"offload_s", figure(t.offload, t.known)},
                   {"model_flops_per_token", figure(t.model_flops_per_token, true)}};
    run_to_json(r.run, out);
    if (r.config.plan.on) {
        json plans = json::array(), changing = json::array();
        for (const Plan& p : r.plans.keeping_training) plans.push_back(plan_to_json(p));
        for (const Plan& p : r.plans.changing_training) changing.push_back(plan_to_json(p));
        out["plans"] = std::move(plans);
        out["plans_changing_training"] = std::move(changing);  // LoRA for full fine-tuning, a shorter sequence, fewer generations
    }
    return out;
}

}  // namespace vramcalc
