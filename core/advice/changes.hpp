// What can be changed to make a run fit, as a table: each row a change the suggestions offer alone and the planner
// combines, with the configuration keys it sets (a JSON patch, applied through the same parser users go through).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/estimate.hpp"

namespace vramcalc {

// The setting a change acts on: rows of one axis are alternatives (the planner takes at most one of them), rows of
// different axes combine. `layout` rows are the suggestions' single sharding steps; the planner enumerates layouts
// from the strategy table instead (planner.cpp). Within an axis, rows run from the smallest saving to the largest;
// the checkpointing rows form a chain in which each never holds more memory than the one before it.
enum class ChangeAxis {
    reference, teacher, rollout, reward, inference_engine,  // TRL's trainers
    precision, micro_batch, sequence, checkpointing, selective_recompute, attention, loss, activation_offload, optimizer_step, layout,
    optimizer, generations, adapters
};

// What a row reads: the configuration it would change, that configuration's peak terms and largest micro-batch.
struct ChangeContext {
    const Config& config;
    const Terms& peak;
    std::uint64_t max_micro_batch;
};

struct ChangeRow {
    const char* id;
    ChangeAxis axis;
    // It changes the result of the training, not just its cost (LoRA for full fine-tuning, a shorter sequence, fewer
    // generations): the planner offers it only in its separate group.
    bool changes_training;
    bool suggested_alone;  // a suggestion on its own (false: the planner's finer steps only)
    bool (*applies)(const ChangeContext&);
    nlohmann::json (*patch)(const ChangeContext&);
    std::string (*label)(const ChangeContext&, const nlohmann::json& patch);
    std::string (*why)(const ChangeContext&, const nlohmann::json& patch);
};

// In the suggestions' order: an OOM checklist (the trainer's own options, precision, micro-batch and sequence,
// checkpointing and the attention kernel, the loss, offload, sharding, the optimizer, LoRA/QLoRA).
const std::vector<ChangeRow>& change_table();

// The configuration with a patch applied, read again by parse_config; false when the result is not a valid one.
// `base` is config_to_json of the configuration, for callers that apply many patches to one.
bool apply_patch(const Config&, const nlohmann::json& patch, Config& out);
bool apply_patch(const nlohmann::json& base, const nlohmann::json& patch, Config& out);

}  // namespace vramcalc
