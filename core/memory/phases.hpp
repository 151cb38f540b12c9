// The moments of one pipeline stage's step where the peak can fall: supervised training (estimate.cpp) and TRL's
// trainers (trl_phases.cpp), over the same resident model states.
#pragma once
#include <vector>

#include "memory/estimate.hpp"
#include "memory/step.hpp"

namespace vramcalc {

Terms resident(const Step&);                            // model states and buffers, setup to the end
std::vector<Moment> supervised_moments(const Step&);    // in the step's order, each with its phase
std::vector<Phase> phases_of(const std::vector<Moment>&);  // each phase's largest moment
std::vector<Phase> supervised_phases(const Step&);      // forward, loss, backward, optimizer_step
std::vector<Phase> trl_phases(const Step&);             // [generation], [scoring passes], policy_forward, backward, ...
double inference_engine_bytes(const Step&);             // a colocated vLLM's share of the GPU
double reward_element_bytes(const Step&);               // PPO's frozen reward model: reward_dtype, or the policy's
double ppo_kept_scores_bytes(const Step&);              // generate's fp32 scores of a rollout, kept to the next
double fsdp2_reference_gather_bytes(const Step&);       // FSDP 2's one-unit reference: flat buffer and parameters

}  // namespace vramcalc
