#include "advice/planner.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "advice/changes.hpp"
#include "hardware/gpus.hpp"
#include "setup/config_checks.hpp"
#include "setup/config_json.hpp"
#include "setup/schema.hpp"
#include "setup/strategies.hpp"

namespace vramcalc {

using nlohmann::json;

// The search, per strategy layout (strategy, zero stage, offload, FSDP version, tp, pp, GPUs: enumerated exactly from
// the strategy table), over every combination of the change table's combinable axes (precision, the trainer's
// options, attention, loss, activation offload, optimizer step, optimizer: exact, each axis keeping the
// configuration's value or taking one of its rows), and for each combination a staircase over micro-batch x
// checkpointing. Pruned, never changing the answer where its assumptions hold:
// - memory never rises with more checkpointing along the checkpointing rows' chain, nor falls with a larger
//   micro-batch: for each micro-batch the staircase takes the least checkpointing that fits, and stops at the first
//   micro-batch that fits at no level;
// - more checkpointing never shortens the step (it only adds recomputation), so the least that fits is the fastest;
// - within an axis each row saves more than the one before it (changes.hpp): a layout whose floor (every axis at
//   its last row, the most checkpointing, the smallest micro-batch) does not fit is skipped;
// - branch and bound: a combination whose fastest micro-batch without more checkpointing (fit ignored) is no faster
//   than the plans already kept is skipped;
// - whether a micro-batch and grad_accum pass check_consistency depends on the layout, not on the combined axes.
// Pruned over large spaces only (more than kExactLayouts layouts), where the answer may differ from an exhaustive
// search: a layout trailing the kept plans by more than kLayoutMargin is skipped unless precision or attention can
// change (the other axes move the step by a few percent).
// tests/unit/test_planner.cpp checks the result against an exhaustive search of small spaces.

namespace {

constexpr std::size_t kMaxMicroBatchSteps = 11;  // 1 to 1024 when the global batch is not kept
constexpr std::uint64_t kMaxMicroBatch = 4096;    // the largest micro-batch a plan splits the global batch into
constexpr std::size_t kExactLayouts = 48;  // up to this many layouts the search is exact
constexpr double kLayoutMargin = 1.1;

// Sequences per optimizer step (context-parallel ranks share one sequence).
std::uint64_t global_batch(const Config& c) { return c.micro_batch * c.grad_accum * (c.gpus / (c.tp * c.pp * c.cp)); }

struct Layout {
    std::uint64_t gpus;
    const StrategyTraits* strategy;
    int zero;
    Offload offload;
    int fsdp_version;
    std::uint64_t tp, pp;
};

// Keys whose defaults follow the layout, left to their rules when the layout changes.
constexpr const char* kLayoutFollowers[] = {"sequence_parallel", "pp_stages_per_rank"};

bool same_layout(const Layout& l, const Config& c) {
    return l.gpus == c.gpus && l.strategy->id == c.strategy && l.zero == c.zero && l.offload == c.offload &&
           (l.strategy->id != Strategy::fsdp || l.fsdp_version == c.fsdp_version) && l.tp == c.tp && l.pp == c.pp;
}

json layout_patch(const Layout& l) {
    return {{"gpus", l.gpus}, {"strategy", l.strategy->name}, {"zero", l.zero}, {"offload", to_string(l.offload)},
            {"fsdp_version", l.fsdp_version}, {"tp", l.tp}, {"pp", l.pp}};
}

std::string layout_label(const Layout& l, const Config& from) {
    std::string s = l.strategy->label;
    if (l.strategy->id == Strategy::fsdp) s += " " + std::to_string(l.fsdp_version);
    const char* zero = l.strategy->zero_stages != 1 ? l.strategy->zero_labels[l.zero] : nullptr;
    if (l.strategy->id == Strategy::deepspeed) s += " stage " + std::to_string(l.zero) + (l.zero ? std::string(" (") + zero + ")" : "");
    else if (l.strategy->id == Strategy::fsdp) s += std::string(" ") + zero;
    else if (zero && l.zero) s += std::string(", ") + zero;
    if (l.offload != Offload::none) s += ", " + std::string(to_string(l.offload)) + " offloaded to CPU";
    if (l.tp > 1) s += ", tp " + std::to_string(l.tp);
    if (l.pp > 1) s += ", pp " + std::to_string(l.pp);
    if (l.gpus != from.gpus) s += " on " + std::to_string(l.gpus) + (l.gpus == 1 ? " GPU" : " GPUs");
    return s;
}

std::vector<std::uint64_t> powers_of_two(std::uint64_t up_to) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t v = 1; v <= up_to; v *= 2) out.push_back(v);
    return out;
}

// Every layout the strategy table allows on each GPU count (tp within a node, powers of two).
std::vector<Layout> layouts_for(const Config& c, const std::vector<std::uint64_t>& counts) {
    std::vector<Layout> out;
    const std::vector<Strategy>& allowed = c.plan.strategies;
    for (std::uint64_t g : counts)
        for (const StrategyTraits& s : strategy_table()) {
            if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s.id) == allowed.end()) continue;
            if ((s.max_gpus && g > s.max_gpus) || (g == 1 && s.id == Strategy::ddp)) continue;  // DDP on one GPU: single
            for (int zero = 0; zero < 4; ++zero) {
                if (!(s.zero_stages >> zero & 1)) continue;
                std::vector<Offload> offloads{Offload::none};
                if (s.offload == OffloadSupport::deepspeed && zero >= 1) offloads.push_back(Offload::optimizer);
                if (s.offload == OffloadSupport::deepspeed && zero == 3) offloads.push_back(Offload::optimizer_and_params);
                if (s.offload == OffloadSupport::fsdp && zero >= 2) offloads.push_back(Offload::optimizer_and_params);
                const std::vector<int> versions = s.id == Strategy::fsdp ? std::vector<int>{1, 2} : std::vector<int>{c.fsdp_version};
                for (Offload o : offloads)
                    for (int v : versions) {
                        const bool meshed = !s.mesh_needs_fsdp2 || v == 2;
                        const auto tps = s.tensor_parallel && meshed ? powers_of_two(std::min(g, c.gpus_per_node)) : std::vector<std::uint64_t>{1};
                        const auto pps = s.pipeline_parallel && meshed ? powers_of_two(std::min(g, c.model.layers)) : std::vector<std::uint64_t>{1};
                        for (std::uint64_t tp : tps)
                            for (std::uint64_t pp : pps)
                                if (g % (tp * pp * c.cp) == 0) out.push_back({g, &s, zero, o, v, tp, pp});
                    }
            }
        }
    return out;
}

// (micro_batch, grad_accum) pairs, micro-batch ascending: those keeping the global batch on the layout's replicas,
// or micro-batches 1 to 1024 with grad_accum as given.
std::vector<std::pair<std::uint64_t, std::uint64_t>> batch_splits(const Config& c, const Layout& l, bool keep_global,
                                                                  std::uint64_t global) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    if (!keep_global) {
        for (std::uint64_t b = 1; out.size() < kMaxMicroBatchSteps; b *= 2) out.push_back({b, c.grad_accum});
        return out;
    }
    const std::uint64_t replicas = l.gpus / (l.tp * l.pp * c.cp);
    if (global % replicas) return out;
    const std::uint64_t per_replica = global / replicas;
    for (std::uint64_t b = 1; b <= std::min(per_replica, kMaxMicroBatch); ++b)
        if (per_replica % b == 0) out.push_back({b, per_replica / b});
    return out;
}

// A plain key's value set through its schema binding, exactly as parse_config reads it (nothing that follows these
// keys is unpinned in an echoed configuration); false for a key with a codec of its own.
bool set_typed(Config& c, const Key& k, const json& v) {
    if (k.parent || k.codec != Codec::typed || !k.value.at) return false;
    void* p = k.value.at(c);
    using K = Binding::Kind;
    switch (k.value.kind) {
        case K::u64:
            if (!v.is_number_unsigned()) return false;
            *static_cast<std::uint64_t*>(p) = v.get<std::uint64_t>();
            return true;
        case K::i32:
            if (!v.is_number_integer()) return false;
            *static_cast<int*>(p) = v.get<int>();
            return true;
        case K::flag:
            if (!v.is_boolean()) return false;
            *static_cast<bool*>(p) = v.get<bool>();
            return true;
        case K::enumeration:
            if (!v.is_string()) return false;
            for (const ChoiceView& choice : k.choices)
                if (v.get_ref<const std::string&>() == choice.name) {
                    k.value.set_enum(p, choice.value);
                    return true;
                }
            return false;
        default: return false;
    }
}

// A key's value and its members' copied through the schema's bindings (false where one has none).
bool copyable(const Key& k) {
    const std::size_t row = std::size_t(&k - config_keys().data()) + 1;
    for (const Key& member : config_keys())
        if (member.parent == row && !copyable(member)) return false;
    return k.value.at != nullptr;
}
void copy_key(const Key& k, const Config& from, Config& to) {
    const std::size_t row = std::size_t(&k - config_keys().data()) + 1;
    for (const Key& member : config_keys())
        if (member.parent == row) copy_key(member, from, to);
    k.value.copy(from, to);
}

// What a row's patch does, read once per search by parse_config over the configuration's echo: the keys whose echo
// it changes, copied onto each layout's configuration through their bindings (none of them follows the layout).
struct RowEffect {
    bool ok = false;        // parse_config took it on the configuration's own layout (else it is read again per layout)
    bool copyable = false;  // every key it changes has a binding (else it is read again per layout)
    Config parsed;
    std::vector<const Key*> keys;
};
RowEffect effect_of(const json& base, const json& patch) {
    RowEffect e;
    json j = base;
    for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
    ParsedConfig p = parse_config(j);
    if (!(e.ok = p.ok())) return e;
    e.parsed = std::move(p.config);
    json echo = config_to_json(e.parsed);
    e.copyable = true;
    for (const Key& k : config_keys()) {
        if (k.parent || echo.value(k.name, json()) == base.value(k.name, json())) continue;
        e.keys.push_back(&k);
        e.copyable = e.copyable && copyable(k);
    }
    return e;
}

bool valid(const Config& c) {
    std::vector<FieldError> errors;
    check_consistency(c, errors);
    return errors.empty();
}

bool parse_into(const json& j, Config& out) {
    ParsedConfig p = parse_config(j);
    if (!p.ok()) return false;
    out = std::move(p.config);
    return true;
}

void merge(json& into, const json& patch) {
    for (auto it = patch.begin(); it != patch.end(); ++it) into[it.key()] = it.value();
}

// How plans compare: a known step time before an unknown one, a full time before a lower bound (offload's CPU step
// is not timed), then seconds per token (GPU-seconds per token when the GPU count may change and a price is given),
// then fewer changes, then less memory.
struct Rank {
    bool untimed = true, bound = false;
    double seconds_per_token = 0;  // GPU-seconds when ranking by cost
    std::size_t changes = 0;
    double total = 0;
};
bool faster(const Rank& a, const Rank& b) {  // on time alone
    if (a.untimed != b.untimed) return b.untimed;
    if (a.bound != b.bound) return b.bound;
    return a.seconds_per_token < b.seconds_per_token;
}
bool better(const Rank& a, const Rank& b) {
    if (faster(a, b) || faster(b, a)) return faster(a, b);
    if (a.changes != b.changes) return a.changes < b.changes;
    return a.total < b.total;
}

struct Search {
    const Config& from;  // the configuration plans change
    json base;           // its echo, without `plan`
    bool keep_global_batch;
    std::uint64_t global_batch;  // the one kept
    bool by_gpu_seconds;
    std::size_t count;
};

Rank rank_of(const Search& s, const Config& c, const StepTime& t, double total, std::size_t changes) {
    Rank r;
    r.untimed = !t.known, r.bound = t.lower_bound, r.changes = changes, r.total = total;
    if (t.known) r.seconds_per_token = (s.by_gpu_seconds ? double(c.gpus) : 1.0) / t.tokens_per_s;
    return r;
}

struct Found {
    std::size_t layout = 0;
    std::vector<const ChangeRow*> rows;  // the combination's rows, then the checkpointing row (if any)
    std::uint64_t micro_batch = 0, grad_accum = 0;
    Rank rank;
};

// The change table's axes the search combines (layout and micro-batch are its own; checkpointing is the staircase).
constexpr ChangeAxis kCombined[] = {ChangeAxis::reference, ChangeAxis::teacher, ChangeAxis::rollout, ChangeAxis::reward,
                                    ChangeAxis::inference_engine, ChangeAxis::precision, ChangeAxis::attention, ChangeAxis::loss,
                                    ChangeAxis::activation_offload, ChangeAxis::optimizer_step, ChangeAxis::optimizer};

std::vector<const ChangeRow*> rows_of(ChangeAxis axis, const ChangeContext& x) {
    std::vector<const ChangeRow*> out;
    for (const ChangeRow& r : change_table())
        if (r.axis == axis && !r.changes_training && r.applies(x)) out.push_back(&r);
    return out;
}

// A layout's configuration, with what the search needs of it.
struct Prepared {
    std::size_t layout = 0;
    bool moved = false;  // not the configuration's own layout
    Config config;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> splits;
    std::vector<bool> split_valid;  // check_consistency on the micro-batch and grad_accum
    Rank prior;        // its fastest split as it is (fit ignored): the order layouts are searched in
};

// The best plan per layout, best first, at most s.count.
std::vector<Found> search(const Search& s, const std::vector<Layout>& layouts) {
    std::vector<Prepared> prepared;
    for (std::size_t li = 0; li < layouts.size(); ++li) {
        Prepared p;
        p.layout = li, p.moved = !same_layout(layouts[li], s.from);
        p.splits = batch_splits(s.from, layouts[li], s.keep_global_batch, s.global_batch);
        if (p.splits.empty()) continue;
        // The layout's keys are plain: set through their bindings, the keys that follow them given their defaults by
        // their own rules, as parse_config reads the echo without those followers and with the layout's keys.
        p.config = s.from;
        if (p.moved) {
            const json patch = layout_patch(layouts[li]);
            for (auto it = patch.begin(); it != patch.end(); ++it) set_typed(p.config, *find_key(it.key()), it.value());
            for (const char* follower : kLayoutFollowers) find_key(follower)->before(p.config);
            if (!valid(p.config)) continue;
        }
        // What check_consistency says of a micro-batch and grad_accum depends on the layout and the model only (its
        // size limit, GRPO's whole groups), not on the combinable axes' keys: checked once per layout.
        Config c = p.config;
        bool any = false;
        for (const auto& [b, accumulation] : p.splits) {
            c.micro_batch = b, c.grad_accum = accumulation;
            p.split_valid.push_back(valid(c));
            if (!p.split_valid.back()) continue;
            const Rank r = rank_of(s, c, estimate_step_time(c), 0, 0);
            if (!any || faster(r, p.prior)) p.prior = r;
            any = true;
        }
        if (any) prepared.push_back(std::move(p));
    }
    std::stable_sort(prepared.begin(), prepared.end(), [](const Prepared& a, const Prepared& b) { return faster(a.prior, b.prior); });

    std::map<std::string, RowEffect> effects;  // by patch
    std::vector<Found> best;  // one per layout
    for (Prepared& p : prepared) {
        const Config& cl = p.config;
        const auto& splits = p.splits;
        const MemoryEstimate ml = estimate_memory(cl);
        const ChangeContext xl{cl, ml.at_peak(), 0};
        std::vector<std::vector<const ChangeRow*>> axes;  // each: nullptr (keep) then its rows
        for (ChangeAxis a : kCombined) {
            std::vector<const ChangeRow*> options{nullptr};
            for (const ChangeRow* r : rows_of(a, xl)) options.push_back(r);
            if (options.size() > 1) axes.push_back(options);
        }
        std::vector<std::vector<const ChangeRow*>> chains;  // the checkpointing chain, and each selective row alone
        chains.push_back({nullptr});
        for (const ChangeRow* r : rows_of(ChangeAxis::checkpointing, xl)) chains[0].push_back(r);
        for (const ChangeRow* r : rows_of(ChangeAxis::selective_recompute, xl)) chains.push_back({r});

        // Each row's effect (read once per search) copied onto the layout's configuration; rows that change a key
        // without a binding, or that the configuration's own layout refuses, are read through parse_config with the
        // layout's keys, once per set of them.
        std::map<const ChangeRow*, std::pair<json, const RowEffect*>> here;  // each row's patch here, and its effect
        auto note = [&](const ChangeRow* r) {
            if (!r || here.count(r)) return;
            json patch = r->patch(xl);
            const std::string text = patch.dump();
            auto it = effects.find(text);
            if (it == effects.end()) it = effects.emplace(text, effect_of(s.base, patch)).first;
            here[r] = {std::move(patch), &it->second};
        };
        for (const auto& options : axes)
            for (const ChangeRow* r : options) note(r);
        for (const auto& chain : chains)
            for (const ChangeRow* r : chain) note(r);
        std::map<std::vector<const ChangeRow*>, std::pair<bool, Config>> reread;
        auto configure = [&](const std::vector<const ChangeRow*>& combo, const ChangeRow* level, Config& out) {
            std::vector<const ChangeRow*> rows = combo;
            if (level) rows.push_back(level);
            out = cl;
            std::vector<const ChangeRow*> uncopyable;
            for (const ChangeRow* r : rows) {
                const RowEffect& e = *here.at(r).second;
                if (!e.ok || !e.copyable) uncopyable.push_back(r);  // refused on the configuration's own layout only, maybe
                else
                    for (const Key* k : e.keys) copy_key(*k, e.parsed, out);
            }
            if (!uncopyable.empty()) {
                auto it = reread.find(rows);
                if (it == reread.end()) {
                    json j = s.base;
                    if (p.moved) {
                        for (const char* follower : kLayoutFollowers) j.erase(follower);
                        merge(j, layout_patch(layouts[p.layout]));
                    }
                    for (const ChangeRow* r : rows) merge(j, here.at(r).first);
                    Config c;
                    const bool ok = parse_into(j, c);
                    it = reread.emplace(rows, std::pair<bool, Config>{ok, std::move(c)}).first;
                }
                if (!it->second.first) return false;
                out = it->second.second;
            }
            return valid(out);
        };
        auto at_batch = [&](Config& c, std::size_t i) {
            c.micro_batch = splits[i].first, c.grad_accum = splits[i].second;
            return p.split_valid[i] && !(c.optimizer_in_backward && c.grad_accum > 1);  // torchtune's optimizer_in_bwd: no accumulation
        };

        // Plans of this layout matter while they beat its own best so far and the count-th best of the others.
        const bool others = best.size() >= s.count;
        Rank limit;
        if (others) {
            std::vector<Rank> ranks;
            for (const Found& f : best) ranks.push_back(f.rank);
            std::nth_element(ranks.begin(), ranks.begin() + long(s.count - 1), ranks.end(), better);
            limit = ranks[s.count - 1];
        }
        // Pruned over large spaces: the remaining axes (loss, optimizer, offload, the trainer's options) change the
        // step by a few percent (the loss's and the optimizer step's share), so a layout whose fastest split as it
        // is trails the plans kept by more than kLayoutMargin is skipped, unless precision or attention can change.
        const bool speeds_up = std::any_of(axes.begin(), axes.end(), [](const std::vector<const ChangeRow*>& options) {
            return options.back()->axis == ChangeAxis::precision || options.back()->axis == ChangeAxis::attention;
        });
        if (prepared.size() > kExactLayouts && others && !speeds_up && !p.prior.untimed && !limit.untimed &&
            p.prior.bound == limit.bound && p.prior.seconds_per_token > kLayoutMargin * limit.seconds_per_token)
            continue;
        // Memory never falls as the micro-batch grows at a fixed grad_accum; keeping the global batch, the split
        // without accumulation (the largest micro-batch) drops the accumulation's buffers too, so it stands apart:
        // splits [0, ordered) are monotone, the one after them is searched on its own.
        const bool alone = s.keep_global_batch && splits.size() > 1 && splits.back().second == 1;
        const std::size_t ordered = splits.size() - (alone ? 1 : 0);
        // The floor: every axis at its last row and the most checkpointing. Ordered splits past the largest
        // micro-batch at which it fits fit nowhere; a layout whose floor fits at no split is skipped.
        std::vector<std::size_t> usable;
        {
            std::vector<const ChangeRow*> floor_rows;
            for (const auto& options : axes) floor_rows.push_back(options.back());
            Config floor;
            if (configure(floor_rows, chains[0].back(), floor)) {
                auto fits_at = [&](std::size_t i) {
                    floor.micro_batch = splits[i].first, floor.grad_accum = splits[i].second;
                    return estimate_memory(floor).fits;
                };
                if (fits_at(0)) {
                    std::size_t lo = 0, hi = ordered;  // fits at lo, not at hi
                    while (hi - lo > 1) {
                        const std::size_t mid = (lo + hi) / 2;
                        (fits_at(mid) ? lo : hi) = mid;
                    }
                    for (std::size_t i = 0; i <= lo; ++i) usable.push_back(i);
                }
                if (alone && fits_at(ordered)) usable.push_back(ordered);
            } else {
                for (std::size_t i = 0; i < splits.size(); ++i) usable.push_back(i);
            }
            if (usable.empty()) continue;
        }
        best.reserve(best.size() + 1);
        Found* kept = nullptr;  // this layout's best so far
        std::vector<std::size_t> pick(axes.size(), 0);
        while (true) {
            std::vector<const ChangeRow*> combo;
            for (std::size_t a = 0; a < axes.size(); ++a)
                if (axes[a][pick[a]]) combo.push_back(axes[a][pick[a]]);
            const std::size_t base_changes = combo.size() + (p.moved ? 1 : 0);
            Config c;
            if (configure(combo, nullptr, c)) {
                // Each split's step as it is, fit ignored: a bound on the split at every checkpointing level. Whether
                // the step is a lower bound (offload) is the combination's, so one split can rule them all out.
                std::vector<Rank> as_is(splits.size());
                std::vector<bool> timed(splits.size(), false);
                auto beaten = [&](const Rank& lower) {
                    auto by = [&](const Rank& b) {  // untimed (TRL's trainers): only fewer changes rank before
                        if (lower.untimed) return b.untimed && b.changes < lower.changes;
                        return !faster(lower, b) && (faster(b, lower) || b.changes <= lower.changes);
                    };
                    return (others && by(limit)) || (kept && by(kept->rank));
                };
                auto promising = [&](std::size_t i) { return timed[i] && !beaten(as_is[i]); };
                bool any = false;
                for (std::size_t i : usable) {
                    if (!at_batch(c, i)) continue;
                    as_is[i] = rank_of(s, c, estimate_step_time(c), 0, base_changes), timed[i] = true;
                    any = any || promising(i);
                    Rank unbounded = as_is[i];
                    unbounded.seconds_per_token = 0;
                    if (beaten(unbounded)) break;
                }
                // The staircase over splits[begin, end): for each, the least level of the chain that fits.
                auto walk = [&](const std::vector<const ChangeRow*>& chain, std::size_t begin, std::size_t end) {
                    std::size_t level = 0;
                    Config at;
                    bool have = configure(combo, chain[level], at);
                    for (std::size_t i = begin; i < end && have;) {
                        // Skipping a split leaves the level where it is: the least level that fits never falls as
                        // the micro-batch grows.
                        if (!promising(i) || !at_batch(at, i)) {
                            ++i;
                            continue;
                        }
                        const Step step(at);
                        const MemoryEstimate m = estimate_memory(step);
                        if (!m.fits) {
                            if (++level == chain.size()) break;
                            have = configure(combo, chain[level], at);
                            continue;
                        }
                        const std::size_t changes = base_changes + (chain[level] ? 1 : 0) +
                                                    (splits[i].first != s.from.micro_batch ? 1 : 0);
                        const Rank r = rank_of(s, at, estimate_step_time(step), m.total, changes);
                        if (!kept || better(r, kept->rank)) {
                            Found f{p.layout, combo, splits[i].first, splits[i].second, r};
                            if (chain[level]) f.rows.push_back(chain[level]);
                            if (kept) *kept = f;
                            else {
                                best.push_back(f);
                                kept = &best.back();
                            }
                        }
                        ++i;
                    }
                };
                const std::size_t ordered_usable = usable.back() == ordered ? usable.size() - 1 : usable.size();
                for (const auto& chain : any ? chains : decltype(chains){}) {
                    walk(chain, 0, ordered_usable);
                    if (alone && usable.back() == ordered) walk(chain, ordered, ordered + 1);
                }
            }
            std::size_t a = 0;
            for (; a < axes.size(); ++a) {
                if (++pick[a] < axes[a].size()) break;
                pick[a] = 0;
            }
            if (a == axes.size()) break;
        }
    }
    std::sort(best.begin(), best.end(), [](const Found& a, const Found& b) { return better(a.rank, b.rank); });
    if (best.size() > s.count) best.resize(s.count);
    return best;
}

json without_plan(const Config& c) {
    json j = config_to_json(c);
    j.erase("plan");
    return j;
}

// A found plan as the normal path reads it: its patch applied to the echoed configuration by parse_config, then
// estimated again (a plan that does not fit there is dropped).
bool realise(const Search& s, const std::vector<Layout>& layouts, const Found& f, Plan& plan) {
    const Layout& layout = layouts[f.layout];
    const Config& from = s.from;
    json j = s.base;
    if (!same_layout(layout, from)) {
        for (const char* follower : kLayoutFollowers) j.erase(follower);
        json shown = json::object();
        const json lp = layout_patch(layout);
        for (auto it = lp.begin(); it != lp.end(); ++it)
            if (!s.base.contains(it.key()) || s.base[it.key()] != it.value()) shown[it.key()] = it.value();
        merge(j, lp);
        plan.changes.push_back({layout_label(layout, from), shown, false});
    }
    Config at_layout;
    if (!parse_into(j, at_layout)) return false;
    const MemoryEstimate m = estimate_memory(at_layout);
    const ChangeContext xl{at_layout, m.at_peak(), 0};
    for (const ChangeRow* r : f.rows) {
        const json p = r->patch(xl);
        merge(j, p);
        plan.changes.push_back({r->label(xl, p), p, false});
    }
    if (f.micro_batch != from.micro_batch || f.grad_accum != from.grad_accum) {
        const json p = {{"micro_batch", f.micro_batch}, {"grad_accum", f.grad_accum}};
        merge(j, p);
        plan.changes.push_back({"micro_batch " + std::to_string(f.micro_batch) + " with grad_accum " + std::to_string(f.grad_accum) +
                                    (s.keep_global_batch ? " (the same global batch)" : ""),
                                p, false});
    }
    if (!parse_into(j, plan.config)) return false;
    plan.memory = estimate_memory(plan.config);
    if (!plan.memory.fits) return false;
    plan.time = estimate_step_time(plan.config);
    plan.run = estimate_run_cost(plan.config, plan.time);
    return true;
}

std::vector<std::uint64_t> gpu_counts(const Config& c) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t g = 1; g <= c.plan.max_gpus; g *= 2) out.push_back(g);  // 1, 2, 4, 8, then nodes of 8 doubling
    return out;
}

std::vector<Plan> plans_for(const Config& from, std::size_t count, std::uint64_t global) {
    Search s{from, without_plan(from), from.plan.keep_global_batch, global,
             !from.plan.keep_gpus && from.price_per_gpu_hour > 0, count};
    std::vector<std::uint64_t> counts{from.gpus};
    if (!from.plan.keep_gpus) {
        counts = gpu_counts(from);
        if (std::find(counts.begin(), counts.end(), from.gpus) == counts.end()) counts.push_back(from.gpus);
    }
    const std::vector<Layout> layouts = layouts_for(from, counts);
    std::vector<Plan> out;
    for (const Found& f : search(s, layouts)) {
        Plan p;
        if (realise(s, layouts, f, p)) out.push_back(std::move(p));
    }
    return out;
}

}  // namespace

Plans make_plans(const Config& c, std::size_t count) {
    Config from = c;
    from.plan.on = false;
    Plans out;
    out.keeping_training = plans_for(from, count, global_batch(from));
    if (c.plan.keep_method) return out;
    const MemoryEstimate m = estimate_memory(from);
    const ChangeContext x{from, m.at_peak(), 0};
    for (const ChangeRow& row : change_table()) {
        if (!row.changes_training || !row.applies(x)) continue;
        const json patch = row.patch(x);
        Config changed;
        if (!apply_patch(from, patch, changed)) continue;
        changed.plan = from.plan;
        std::vector<Plan> after = plans_for(changed, 1, global_batch(changed));
        if (after.empty()) continue;
        Plan p = std::move(after.front());
        p.changes.insert(p.changes.begin(), {row.label(x, patch), patch, true});
        p.changes_training = true;
        out.changing_training.push_back(std::move(p));
    }
    auto seconds_per_token = [](const Plan& p) { return p.time.known ? 1 / p.time.tokens_per_s : std::numeric_limits<double>::infinity(); };
    std::stable_sort(out.changing_training.begin(), out.changing_training.end(),
                     [&](const Plan& a, const Plan& b) { return seconds_per_token(a) < seconds_per_token(b); });
    if (out.changing_training.size() > count) out.changing_training.resize(count);
    return out;
}

Sizing size_run(const Config& c) {
    Sizing out;
    if (!(c.train_tokens > 0 || c.epochs * c.dataset_tokens > 0)) {
        out.errors.push_back({"train_tokens", "sizing needs the run's tokens: train_tokens, or epochs and dataset_tokens"});
        return out;
    }
    json base = without_plan(c);
    // The layout is the planner's to choose on each option.
    for (const char* key : {"strategy", "zero", "offload", "tp", "pp"}) base.erase(key);
    for (const char* key : kLayoutFollowers) base.erase(key);
    const bool priced = c.price_per_gpu_hour > 0 || !c.gpu_prices.empty();
    for (const Gpu& gpu : gpu_catalog())
        for (std::uint64_t g : gpu_counts(c)) {
            json j = base;
            j["gpu"] = gpu.id, j["gpus"] = g;
            ParsedConfig p = parse_config(j);
            if (!p.ok()) continue;
            p.config.plan = c.plan;
            p.config.plan.on = false, p.config.plan.keep_gpus = true;
            SizingOption o;
            o.gpu = &gpu, o.gpus = g;
            std::vector<Plan> plans = plans_for(p.config, 1, global_batch(c));
            if (!plans.empty()) o.fits = true, o.plan = std::move(plans.front());
            out.options.push_back(std::move(o));
        }
    // Cheapest first: by cost where priced (unpriced GPUs after), else by GPU-hours; untimed and unfitting ones last.
    auto timed = [](const SizingOption& o) { return o.fits && o.plan.run.has_tokens; };
    auto ranked = [&](const SizingOption& o) { return timed(o) && (!priced || o.plan.run.has_price); };
    auto cost = [&](const SizingOption& o) { return priced ? o.plan.run.cost : o.plan.run.gpu_hours; };
    std::stable_sort(out.options.begin(), out.options.end(), [&](const SizingOption& a, const SizingOption& b) {
        if (ranked(a) != ranked(b)) return ranked(a);
        if (timed(a) != timed(b)) return timed(a);
        if (!ranked(a)) return a.fits && !b.fits;
        return cost(a) != cost(b) ? cost(a) < cost(b) : a.plan.run.hours < b.plan.run.hours;
    });
    // In that order, an option is on the time-cost frontier when it is faster than every cheaper one.
    double fastest = std::numeric_limits<double>::infinity();
    for (SizingOption& o : out.options)
        if (ranked(o) && o.plan.run.hours < fastest) o.pareto = true, fastest = o.plan.run.hours;
    return out;
}

}  // namespace vramcalc
