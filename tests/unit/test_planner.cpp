// The planner (advice/planner.cpp): every plan, estimated again on its own through the normal path, gives the same
// memory and step time and fits; the pruned search equals an exhaustive one over small spaces; plans keep what they
// must; sizing's figures follow from its plans.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "advice/changes.hpp"
#include "advice/report.hpp"
#include "json/api.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"
#include "setup/strategies.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

std::uint64_t global_batch(const Config& c) { return c.micro_batch * c.grad_accum * c.gpus / (c.tp * c.pp * c.cp); }

// The plan's configuration read again from its echo and estimated as any configuration is.
void check_estimated_again(const Plan& p) {
    const json echo = config_to_json(p.config);
    INFO(echo.dump());
    CHECK_FALSE(echo.contains("plan"));
    const Report again = make_report(parsed(echo));
    CHECK(again.memory.fits);
    CHECK(p.memory.fits);
    CHECK(again.memory.total == p.memory.total);
    CHECK(again.time.step == p.time.step);
    CHECK(again.time.lower_bound == p.time.lower_bound);
    CHECK(again.run.cost == p.run.cost);
}

// What every plan of either kind keeps, and what only the labelled group may change.
void check_plans(const Config& c, const Plans& plans) {
    for (const Plan& p : plans.keeping_training) {
        check_estimated_again(p);
        CHECK_FALSE(p.changes_training);
        for (const PlanChange& change : p.changes) CHECK_FALSE(change.changes_training);
        CHECK(p.config.finetune.method == c.finetune.method);
        CHECK(p.config.seq_len == c.seq_len);
        CHECK(p.config.method == c.method);
        CHECK(p.config.num_generations == c.num_generations);
        if (c.plan.keep_global_batch) CHECK(global_batch(p.config) == global_batch(c));
        if (c.plan.keep_gpus) CHECK(p.config.gpus == c.gpus);
        CHECK(p.config.gpus <= std::max(c.gpus, c.plan.max_gpus));
        if (!c.plan.strategies.empty())
            CHECK(std::find(c.plan.strategies.begin(), c.plan.strategies.end(), p.config.strategy) != c.plan.strategies.end());
    }
    for (const Plan& p : plans.changing_training) {
        check_estimated_again(p);
        CHECK(p.changes_training);
        REQUIRE_FALSE(p.changes.empty());
        CHECK(p.changes.front().changes_training);
    }
    if (c.plan.keep_method) CHECK(plans.changing_training.empty());
}

Config with_plan(json j) {
    j["plan"] = j.contains("plan") ? j["plan"] : json(true);
    return parsed(j);
}

bool changes_gpus_or_training(const Suggestion& s, const Config& c) {
    return s.gpus != c.gpus || s.patch.contains("finetune") || s.patch.contains("seq_len") || s.patch.contains("num_generations");
}

// The fastest single change that fits (keeping the GPUs and what is trained) is never faster than the best plan:
// a full time before a lower bound, then the step.
void check_not_slower_than_suggestions(const Config& c, const Plans& plans) {
    const Report r = make_report(c);
    for (const Suggestion& s : r.suggestions) {
        if (!s.fits || changes_gpus_or_training(s, c) || s.step_time <= 0) continue;
        INFO(s.change);
        REQUIRE_FALSE(plans.keeping_training.empty());
        const Plan& best = plans.keeping_training.front();
        if (!s.time_is_bound) CHECK_FALSE(best.time.lower_bound);
        if (best.time.lower_bound == s.time_is_bound) CHECK(best.time.step <= s.step_time * (1 + 1e-12));
    }
}

// The space the planner searches, walked exhaustively through parse_config: every layout of the strategy table on
// the configuration's GPUs, every combination of the change table's combinable rows, every checkpointing row, every
// split of the global batch. Returns the best (lower bound?, seconds per token) that fits.
struct Best {
    bool found = false, bound = false;
    double seconds_per_token = 0;
};
Best exhaustive(const Config& c) {
    const json echo = [&] {
        json j = config_to_json(c);
        j.erase("plan");
        return j;
    }();
    Best best;
    const std::uint64_t g = c.gpus, global = global_batch(c);
    std::vector<json> layouts;
    for (const StrategyTraits& s : strategy_table()) {
        if ((s.max_gpus && g > s.max_gpus) || (g == 1 && s.id == Strategy::ddp)) continue;
        for (int zero = 0; zero < 4; ++zero) {
            if (!(s.zero_stages >> zero & 1)) continue;
            std::vector<std::string> offloads{"none"};
            if (s.offload == OffloadSupport::deepspeed && zero >= 1) offloads.push_back("optimizer");
            if (s.offload == OffloadSupport::deepspeed && zero == 3) offloads.push_back("optimizer+params");
            if (s.offload == OffloadSupport::fsdp && zero >= 2) offloads.push_back("optimizer+params");
            for (const std::string& o : offloads)
                for (int v : s.id == Strategy::fsdp ? std::vector<int>{1, 2} : std::vector<int>{c.fsdp_version})
                    for (std::uint64_t tp = 1; tp <= g; tp *= 2)
                        for (std::uint64_t pp = 1; pp <= g; pp *= 2) {
                            const bool meshed = !s.mesh_needs_fsdp2 || v == 2;
                            if ((tp > 1 && !(s.tensor_parallel && meshed)) || (pp > 1 && !(s.pipeline_parallel && meshed)) ||
                                g % (tp * pp * c.cp))
                                continue;
                            layouts.push_back({{"gpus", g}, {"strategy", s.name}, {"zero", zero}, {"offload", o},
                                               {"fsdp_version", v}, {"tp", tp}, {"pp", pp}});
                        }
        }
    }
    for (const json& layout : layouts) {
        json jl = echo;
        jl.erase("sequence_parallel"), jl.erase("pp_stages_per_rank");
        for (auto it = layout.begin(); it != layout.end(); ++it) jl[it.key()] = it.value();
        const ParsedConfig pl = parse_config(jl);
        if (!pl.ok()) continue;
        const MemoryEstimate ml = estimate_memory(pl.config);
        const ChangeContext x{pl.config, ml.at_peak(), 0};
        std::vector<std::vector<const ChangeRow*>> axes;
        std::vector<const ChangeRow*> levels{nullptr};
        for (const ChangeRow& r : change_table()) {
            if (r.changes_training || !r.applies(x) || r.axis == ChangeAxis::layout || r.axis == ChangeAxis::micro_batch) continue;
            if (r.axis == ChangeAxis::checkpointing || r.axis == ChangeAxis::selective_recompute) {
                levels.push_back(&r);
                continue;
            }
            auto same = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a[1]->axis == r.axis; });
            if (same == axes.end()) axes.push_back({nullptr, &r});
            else same->push_back(&r);
        }
        const std::uint64_t replicas = g / (pl.config.tp * pl.config.pp * c.cp);
        if (global % replicas) continue;
        std::vector<std::size_t> pick(axes.size(), 0);
        while (true) {
            for (const ChangeRow* level : levels)
                for (std::uint64_t b = 1; b <= global / replicas; ++b) {
                    if ((global / replicas) % b) continue;
                    json j = jl;
                    auto set = [&](const ChangeRow* r) {
                        const json patch = r->patch(x);
                        for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
                    };
                    for (std::size_t a = 0; a < axes.size(); ++a)
                        if (axes[a][pick[a]]) set(axes[a][pick[a]]);
                    if (level) set(level);
                    j["micro_batch"] = b, j["grad_accum"] = global / replicas / b;
                    const ParsedConfig p = parse_config(j);
                    if (!p.ok() || (p.config.optimizer_in_backward && p.config.grad_accum > 1)) continue;
                    if (!estimate_memory(p.config).fits) continue;
                    const StepTime t = estimate_step_time(p.config);
                    const double spt = 1 / t.tokens_per_s;
                    if (!best.found || (best.bound && !t.lower_bound) ||
                        (best.bound == t.lower_bound && spt < best.seconds_per_token))
                        best = {true, t.lower_bound, spt};
                }
            std::size_t a = 0;
            for (; a < axes.size(); ++a) {
                if (++pick[a] < axes[a].size()) break;
                pick[a] = 0;
            }
            if (a == axes.size()) break;
        }
    }
    return best;
}

const json kLlama13bOnOneA100 = {{"model", "llama-2-13b"}, {"gpu", "a100-80gb"}, {"seq_len", 4096}, {"micro_batch", 2}};

}  // namespace

TEST_CASE("planner: Llama-2-13B full fine-tuning on one A100 80GB, where no single change fits") {
    const Config c = with_plan(kLlama13bOnOneA100);
    const Report r = make_report(c, &make_plans);
    CHECK_FALSE(r.memory.fits);
    for (const Suggestion& s : r.suggestions)
        if (!changes_gpus_or_training(s, c)) CHECK_FALSE(s.fits);
    REQUIRE_FALSE(r.plans.keeping_training.empty());
    REQUIRE_FALSE(r.plans.changing_training.empty());
    check_plans(c, r.plans);
    for (const Plan& p : r.plans.keeping_training) CHECK(p.changes.size() >= 2);  // a combination, not one change
    // Ranked: a full step time before a lower bound, then the faster step (the global batch is the same).
    for (std::size_t i = 1; i < r.plans.keeping_training.size(); ++i) {
        const Plan &a = r.plans.keeping_training[i - 1], &b = r.plans.keeping_training[i];
        CHECK(a.time.lower_bound <= b.time.lower_bound);
        if (a.time.lower_bound == b.time.lower_bound) CHECK(a.time.step <= b.time.step);
    }
}

TEST_CASE("planner: the pruned search finds what an exhaustive one finds") {
    for (json j : {kLlama13bOnOneA100,
                   json{{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {"strategy", "deepspeed"}},  // bf16-true is the single GPU's
                   json{{"model", "llama-2-7b"}, {"gpu", "l40s"}, {"gpus", 2}, {"seq_len", 2048}, {"micro_batch", 2}, {"grad_accum", 4}},
                   // FSDP's accumulation keeps unsharded gradients: the split without accumulation can fit where smaller
                   // micro-batches do not.
                   json{{"model", "llama-2-7b"}, {"gpu", "a100-40gb"}, {"gpus", 2}, {"strategy", "fsdp"}, {"seq_len", 4096},
                        {"micro_batch", 1}, {"grad_accum", 4}},
                   json{{"model", "llama-2-7b"}, {"gpu", "l4"}, {"seq_len", 1024}, {"micro_batch", 4}, {"attention", "eager"},
                        {"precision", "32-true"}, {"finetune", {{"method", "lora"}}}}}) {
        INFO(j.dump());
        j["plan"] = {{"keep_method", true}};
        const Config c = parsed(j);
        const Best brute = exhaustive(c);
        const Plans plans = make_plans(c);
        REQUIRE(brute.found == !plans.keeping_training.empty());
        if (!brute.found) continue;
        const Plan& best = plans.keeping_training.front();
        CHECK(best.time.lower_bound == brute.bound);
        CHECK(1 / best.time.tokens_per_s == Approx(brute.seconds_per_token).epsilon(1e-12));
        check_plans(c, plans);
    }
}

TEST_CASE("planner: never slower than the fastest single change that fits") {
    for (const json& j : {kLlama13bOnOneA100,
                          json{{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {"strategy", "deepspeed"}},
                          json{{"model", "llama-2-70b"}, {"gpu", "a100-80gb"}, {"gpus", 8}, {"strategy", "fsdp"},
                               {"seq_len", 4096}, {"micro_batch", 2}, {"grad_accum", 4}},
                          json{{"model", "llama-2-7b"}, {"gpu", "a10"}, {"gpus", 4}, {"micro_batch", 8}, {"grad_accum", 2}}}) {
        INFO(j.dump());
        const Config c = with_plan(j);
        const Plans plans = make_plans(c);
        check_plans(c, plans);
        check_not_slower_than_suggestions(c, plans);
    }
}

TEST_CASE("planner: 70B full fine-tuning on 8 GPUs and GRPO with 8 generations on one card fit with plans") {
    const Config big = with_plan({{"model", "llama-2-70b"}, {"gpu", "a100-80gb"}, {"gpus", 8}, {"strategy", "fsdp"},
                                  {"seq_len", 4096}, {"micro_batch", 2}, {"grad_accum", 4}});
    CHECK_FALSE(estimate_memory(big).fits);
    const Plans big_plans = make_plans(big);
    REQUIRE_FALSE(big_plans.keeping_training.empty());
    check_plans(big, big_plans);

    // TRL's trainers are not timed: plans rank by fewer changes, then less memory.
    const Config grpo = with_plan({{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {"method", "grpo"}, {"prompt_len", 512},
                                   {"completion_len", 1024}, {"micro_batch", 8}, {"num_generations", 8}});
    CHECK_FALSE(estimate_memory(grpo).fits);
    const Plans grpo_plans = make_plans(grpo);
    REQUIRE_FALSE(grpo_plans.keeping_training.empty());
    check_plans(grpo, grpo_plans);
    for (std::size_t i = 1; i < grpo_plans.keeping_training.size(); ++i)
        CHECK(grpo_plans.keeping_training[i - 1].changes.size() <= grpo_plans.keeping_training[i].changes.size());
}

// NVIDIA's T4 and V100 datasheets: fp16 tensor cores, no bf16 (bf16 arrived with Ampere).
TEST_CASE("planner: on a GPU without bf16 the plans compute in fp16, and are timed") {
    // Left to its default, the precision is the profile's in fp16 on these GPUs; asked for, bf16 stays.
    CHECK(parsed({{"model", "llama-3.2-1b"}, {"gpu", "t4"}}).precision == Precision::fp16_mixed);
    CHECK(parsed({{"model", "llama-3.2-1b"}, {"gpu", "v100-32gb"}, {"finetune", {{"method", "lora"}}}}).precision ==
          Precision::fp16_base_mixed);
    CHECK(parsed({{"model", "llama-3.2-1b"}, {"gpu", "a100-40gb"}}).precision == Precision::bf16_mixed);
    const Config t4 = with_plan({{"model", "llama-3.2-1b"}, {"gpu", "t4"}, {"precision", "bf16-mixed"}, {"seq_len", 2048},
                                 {"micro_batch", 4}});
    REQUIRE(t4.precision == Precision::bf16_mixed);
    CHECK_FALSE(estimate_memory(t4).fits);
    const Plans plans = make_plans(t4);
    REQUIRE_FALSE(plans.keeping_training.empty());
    check_plans(t4, plans);
    for (const Plan& p : plans.keeping_training) {
        INFO(config_to_json(p.config).dump());
        CHECK((p.config.precision == Precision::fp16_mixed || p.config.precision == Precision::fp16_true ||
               p.config.precision == Precision::fp16_base_mixed || p.config.precision == Precision::fp32_true));
    }
    CHECK(plans.keeping_training.front().time.step > 0);
    // The same changes on an A100 keep bf16.
    Config a100 = t4;
    a100.gpu = *find_gpu("a100-40gb");
    const Terms none;
    const ChangeContext x{a100, none, 0};
    for (const ChangeRow& row : change_table())
        if (row.axis == ChangeAxis::precision && row.applies(x))
            CHECK(row.patch(x)["precision"].get<std::string>().rfind("bf16-", 0) == 0);
    // A configuration in fp16 stays in fp16: LoRA's 16-bit base under 16-mixed is 16-base-mixed.
    const Config fp16_lora = parsed({{"model", "llama-2-13b"}, {"gpu", "rtx-4090"}, {"precision", "16-mixed"},
                                     {"finetune", {{"method", "lora"}}}});
    const ChangeContext y{fp16_lora, none, 0};
    bool base_row = false;
    for (const ChangeRow& row : change_table())
        if (row.axis == ChangeAxis::precision && row.applies(y)) {
            CHECK(row.patch(y)["precision"].get<std::string>().rfind("16-", 0) == 0);
            base_row = base_row || row.patch(y)["precision"] == "16-base-mixed";
        }
    CHECK(base_row);
}

TEST_CASE("planner: constraints") {
    SECTION("the GPU count may change up to max_gpus, ranked by cost with a price") {
        json j = kLlama13bOnOneA100;
        j["plan"] = {{"keep_gpus", false}, {"max_gpus", 8}, {"keep_method", true}};
        j["price_per_gpu_hour"] = 2;
        const Config c = parsed(j);
        const Plans plans = make_plans(c);
        check_plans(c, plans);
        REQUIRE_FALSE(plans.keeping_training.empty());
        for (std::size_t i = 1; i < plans.keeping_training.size(); ++i) {
            const Plan &a = plans.keeping_training[i - 1], &b = plans.keeping_training[i];
            if (a.time.lower_bound == b.time.lower_bound)
                CHECK(double(a.config.gpus) / a.time.tokens_per_s <= double(b.config.gpus) / b.time.tokens_per_s);
        }
    }
    SECTION("allowed strategies") {
        json j = kLlama13bOnOneA100;
        j["plan"] = {{"strategies", {"single"}}};
        const Config c = parsed(j);
        check_plans(c, make_plans(c));
    }
    SECTION("the global batch unpinned: grad_accum as given, the micro-batch free") {
        json j = {{"model", "llama-2-7b"}, {"gpu", "h100-80gb"}, {"seq_len", 2048}, {"micro_batch", 1}, {"grad_accum", 4},
                  {"plan", {{"keep_global_batch", false}}}};
        const Config c = parsed(j);
        const Plans plans = make_plans(c);
        check_plans(c, plans);
        for (const Plan& p : plans.keeping_training) CHECK(p.config.grad_accum == 4);
    }
    SECTION("bad constraints name their field") {
        for (const auto& [plan, field] : {std::pair{json{{"strategies", {"zero-9"}}}, "plan.strategies"},
                                          {json{{"strategies", "fsdp"}}, "plan.strategies"},
                                          {json{{"max_gpus", 0}}, "plan.max_gpus"},
                                          {json{{"keep_gpus", "yes"}}, "plan.keep_gpus"},
                                          {json{{"keep_batch", true}}, "plan.keep_batch"},
                                          {json(7), "plan"}}) {
            const ParsedConfig p = parse_config(json{{"plan", plan}});
            REQUIRE_FALSE(p.ok());
            CHECK(p.errors.front().field == field);
        }
        const ParsedConfig price = parse_config(json{{"price_per_gpu_hour", {{"h100-80gb", -1}, {"h900", 2}}}});
        REQUIRE(price.errors.size() == 2);
        CHECK(price.errors[0].field == "price_per_gpu_hour.h100-80gb");
        CHECK(price.errors[1].field == "price_per_gpu_hour.h900");
    }
}

TEST_CASE("price_per_gpu_hour per GPU: the run's GPU takes its own, and the echo reads back") {
    const Config c = parsed({{"gpu", "h100-80gb"}, {"price_per_gpu_hour", {{"h100-80gb", 2.9}, {"a100-80gb", 1.8}}}, {"train_tokens", 1e9}});
    CHECK(c.price_per_gpu_hour == 2.9);
    const json echo = config_to_json(c);
    CHECK(echo["price_per_gpu_hour"] == json({{"a100-80gb", 1.8}, {"h100-80gb", 2.9}}));
    CHECK(parsed(echo).price_per_gpu_hour == 2.9);
    CHECK(parsed({{"gpu", "l4"}, {"price_per_gpu_hour", {{"h100-80gb", 2.9}}}}).price_per_gpu_hour == 0);
}

TEST_CASE("sizing: which GPUs to rent, each with its fastest plan") {
    json j = kLlama13bOnOneA100;
    j["grad_accum"] = 8;
    j["train_tokens"] = 1e9;
    j["price_per_gpu_hour"] = {{"h100-80gb", 2.9}, {"a100-80gb", 1.8}};
    j["plan"] = {{"max_gpus", 16}};
    const Config c = parsed(j);
    const Sizing s = size_run(c);
    REQUIRE(s.errors.empty());
    REQUIRE_FALSE(s.options.empty());
    bool priced_done = false, any_pareto = false, untimed_seen = false;
    for (std::size_t i = 0; i < s.options.size(); ++i) {
        const SizingOption& o = s.options[i];
        INFO(o.gpu->id << " x " << o.gpus);
        CHECK(o.gpus <= 16);
        if (!o.fits) continue;
        check_estimated_again(o.plan);
        CHECK(o.plan.config.gpu.id == o.gpu->id);
        CHECK(o.plan.config.gpus == o.gpus);
        CHECK(global_batch(o.plan.config) == global_batch(c));
        CHECK(o.plan.config.finetune.method == FinetuneMethod::full);
        if (!o.plan.time.known) {  // no bf16 peak on V100 or T4: no hours, listed after the timed options
            CHECK_FALSE(o.plan.run.has_tokens);
            untimed_seen = true;
            continue;
        }
        CHECK_FALSE(untimed_seen);
        const double tokens_per_s = o.plan.time.tokens_per_s;
        CHECK(o.plan.run.hours == Approx(1e9 / tokens_per_s / 3600));
        CHECK(o.plan.run.gpu_hours == Approx(o.plan.run.hours * double(o.gpus)));
        const bool priced = o.gpu->id == "h100-80gb" || o.gpu->id == "a100-80gb";
        CHECK(o.plan.run.has_price == priced);
        if (priced) {
            CHECK_FALSE(priced_done);  // priced options first, cheapest first
            CHECK(o.plan.run.cost == Approx(o.plan.run.gpu_hours * (o.gpu->id == "h100-80gb" ? 2.9 : 1.8)));
            if (i > 0 && s.options[i - 1].plan.run.has_price) CHECK(s.options[i - 1].plan.run.cost <= o.plan.run.cost);
        } else {
            priced_done = true;
        }
        any_pareto = any_pareto || o.pareto;
    }
    CHECK(any_pareto);
    CHECK(s.options.front().pareto);

    const ParsedConfig untimed = parse_config(json{{"model", "llama-2-7b"}});
    const Sizing none = size_run(untimed.config);
    REQUIRE(none.errors.size() == 1);
    CHECK(none.errors[0].field == "train_tokens");
}

TEST_CASE("plan and sizing through the JSON API") {
    const ApiResult plan = plan_json(kLlama13bOnOneA100.dump());
    REQUIRE(plan.ok);
    const json report = json::parse(plan.json);
    REQUIRE_FALSE(report["plans"].empty());
    for (const json& p : report["plans"]) {
        for (const char* key : {"changes", "config", "fits", "total_bytes", "step_time_s", "gpus", "changes_training"})
            CHECK(p.contains(key));
        // The plan's echoed configuration, estimated on its own, gives the figures the plan shows.
        const json again = json::parse(answer_json(p["config"].dump()).json);
        CHECK(again["total_bytes"] == p["total_bytes"]);
        CHECK(again["step_time_s"] == p["step_time_s"]);
        CHECK(again["fits"] == true);
    }
    CHECK(report.contains("plans_changing_training"));
    CHECK_FALSE(json::parse(answer_json(kLlama13bOnOneA100.dump()).json).contains("plans"));
    // "plan" in an estimate: plans where a planner is given (the CLI), else an error naming it (the page's module).
    json asks = kLlama13bOnOneA100;
    asks["plan"] = true;
    const ApiResult without = answer_json(asks.dump());
    CHECK_FALSE(without.ok);
    CHECK(json::parse(without.json)["errors"][0]["field"] == "plan");
    CHECK(json::parse(estimate_json(asks.dump(), &make_plans).json)["plans"] == report["plans"]);

    json run = kLlama13bOnOneA100;
    run["train_tokens"] = 1e8, run["price_per_gpu_hour"] = 2, run["plan"] = {{"max_gpus", 2}};
    const ApiResult sizing = sizing_json(run.dump());
    REQUIRE(sizing.ok);
    const json options = json::parse(sizing.json)["options"];
    for (const json& o : options) {
        for (const char* key : {"gpu", "gpus", "fits", "plan", "pareto", "hours", "gpu_hours", "cost"}) CHECK(o.contains(key));
        // Known where it fits and its step is timed (V100 and T4 have no bf16 peak: untimed).
        const bool timed = o["fits"] == true && !o["plan"]["step_time_s"].is_null();
        for (const char* key : {"hours", "gpu_hours", "cost"}) CHECK(o[key].is_number() == timed);
    }
    const ApiResult bad = sizing_json(R"({"plan": {"strategies": ["nope"]}})");
    CHECK_FALSE(bad.ok);
    CHECK(json::parse(bad.json)["errors"][0]["field"] == "plan.strategies");
}
