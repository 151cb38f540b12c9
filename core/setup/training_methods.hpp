// TRL's trainers as vramcalc models them (TRL 1.16.0, measured in tests/validation/stacks/trl): how a micro-batch
// becomes the rows of one forward, which head turns hidden states into log-probabilities, and which reference
// log-probabilities each takes.
#pragma once
#include "setup/config.hpp"

namespace vramcalc {

enum class TrlHead {
    model_loss,        // supervised training: the model's own logits and loss (estimate.cpp)
    fused_logprob,     // trl/kernels/chunked_logprob.py (from TRL 1.15): 4096 x 32768 tiles, no whole logits
    full_logits,       // the model's (rows, seq, vocab) logits in fp32 and selective_log_softmax
    fused_divergence,  // trl/kernels/chunked_divergence.py: student and teacher tiles side by side
    policy_and_value,  // TRL 1.12's PPOTrainer: the policy's whole logits beside a trained value model's score
};

struct MethodTraits {
    TrainingMethod method;
    const char* trainer;     // TRL's class
    double rows_per_item;    // forward rows per micro-batch item: a pair's chosen and rejected make 2
    TrlHead head;
    bool takes_reference;    // a reference model or precomputed log-probabilities
    bool needs_reference;
    bool reference_by_default;  // TRL's default beta takes one
    bool generates;          // completions generated inside the step
    bool groups;             // num_generations completions per prompt, scored as a group (GRPO, RLOO)
};

const MethodTraits& method_traits(TrainingMethod);
inline bool is_trl(const Config& c) { return c.method != TrainingMethod::sft; }

}  // namespace vramcalc
