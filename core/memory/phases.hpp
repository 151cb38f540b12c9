// The moments of one pipeline stage's step where the peak can fall: supervised training (estimate.cpp) and TRL's
// trainers (trl_phases.cpp), over the same resident model states.
#pragma once
#include <vector>

#include "memory/estimate.hpp"

namespace vramcalc {

Terms resident(const Config&);                            // model states and buffers, setup to the end
std::vector<Phase> supervised_phases(const Config&);      // forward, loss, backward, optimizer_step
std::vector<Phase> trl_phases(const Config&);             // [generation], [scoring passes], policy_forward, backward, ...
double inference_engine_bytes(const Config&);             // a colocated vLLM's share of the GPU
double reward_element_bytes(const Config&);               // PPO's frozen reward model: reward_dtype, or the policy's
double ppo_kept_scores_bytes(const Config&);              // generate's fp32 scores of a rollout, kept to the next
double fsdp2_reference_gather_bytes(const Config&);       // FSDP 2's one-unit reference: flat buffer and parameters

}  // namespace vramcalc
