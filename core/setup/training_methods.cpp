#include "setup/training_methods.hpp"

namespace vramcalc {

namespace {

// trl/trainer/{dpo,kto,grpo,rloo,distillation}_trainer.py and trl/experimental/{orpo,cpo}/ in TRL 1.16.0; IPO is
// DPOTrainer's loss_type "ipo", SimPO CPOTrainer's loss_type "simpo" with cpo_alpha 0; PPO is
// trl/experimental/ppo/ppo_trainer.py in TRL 1.12.0, the last release with it.
const MethodTraits kMethods[] = {
    {TrainingMethod::sft, "Trainer / SFTTrainer", 1, TrlHead::model_loss, false, false, false, false, false},
    {TrainingMethod::dpo, "DPOTrainer", 2, TrlHead::fused_logprob, true, true, true, false, false},
    {TrainingMethod::ipo, "DPOTrainer (loss_type ipo)", 2, TrlHead::fused_logprob, true, true, true, false, false},
    {TrainingMethod::kto, "KTOTrainer", 1, TrlHead::fused_logprob, true, true, true, false, false},
    {TrainingMethod::orpo, "ORPOTrainer", 2, TrlHead::full_logits, false, false, false, false, false},
    {TrainingMethod::simpo, "CPOTrainer (loss_type simpo)", 2, TrlHead::full_logits, false, false, false, false, false},
    {TrainingMethod::grpo, "GRPOTrainer", 1, TrlHead::fused_logprob, true, false, false, true, true},  // beta 0.0
    {TrainingMethod::rloo, "RLOOTrainer", 1, TrlHead::fused_logprob, true, false, true, true, true},   // beta 0.05
    {TrainingMethod::distill, "DistillationTrainer", 1, TrlHead::fused_divergence, false, false, false, true, false},
    {TrainingMethod::ppo, "PPOTrainer (TRL 1.12)", 1, TrlHead::policy_and_value, true, true, true, true, false},
};

}  // namespace

const MethodTraits& method_traits(TrainingMethod m) {
    for (const MethodTraits& t : kMethods)
        if (t.method == m) return t;
    return kMethods[0];
}

}  // namespace vramcalc
