// Per-GPU memory of one training step: the moments that can hold the peak, and the largest of them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memory/step.hpp"
#include "setup/config.hpp"

namespace vramcalc {

// What is live on the busiest GPU at one moment of the step (bytes).
struct Terms {
    double weights = 0, gradients = 0, optimizer_states = 0, master_weights = 0;
    double activations = 0, logits = 0, temporaries = 0;
    double sum() const {
        return weights + gradients + optimizer_states + master_weights + activations + logits + temporaries;
    }
};

// The moments of a step where the peak can fall.
struct Phase {
    std::string name;  // "forward", "loss", "backward", "optimizer_step"
    Terms terms;
};

// One moment of the step, in the order the step reaches it; a phase's terms are those of its largest moment.
struct Moment {
    std::string_view name;   // "micro_batch_start", "end_of_forward", ... (static text, or the estimate's phase names)
    std::string_view phase;
    Terms terms;
    std::string_view label;  // what it is, in words ("" for a TRL phase)
};

struct MemoryEstimate {
    double params_total = 0, params_trainable = 0;
    std::vector<Phase> phases;
    std::size_t peak_phase = 0;
    std::string stage;              // with pipeline parallelism, the busier stage: "first" or "last"
    double peak_allocated = 0;      // torch.cuda.max_memory_allocated() on the busiest GPU
    double allocator_overhead = 0;  // reserved - allocated
    double collective_stream_cached = 0;  // free in FSDP's collective streams' pools at the peak, up to the capacity
    double peak_reserved = 0;       // torch.cuda.max_memory_reserved()
    double loading_reserved = 0;    // what loading the model left reserved (model_loading.hpp); 0 when not replayed
    double cuda_context = 0;
    double nccl = 0;                // NCCL's buffers for the run's communicators (nccl_memory.hpp)
    double paged_optimizer_states = 0;  // bitsandbytes' paged states: on the GPU, not in max_memory_allocated
    double inference_engine = 0;    // a colocated vLLM's reservation (GRPO), outside PyTorch's allocator
    bool inference_engine_in_total = true;  // false: a sleeping engine, freed at the step's peak
    double total = 0;               // what nvidia-smi shows (fits: without the collective streams' cached blocks)
    double cpu = 0;                 // RAM for offloaded states
    double capacity = 0;
    bool fits = false;
    const Terms& at_peak() const { return phases[peak_phase].terms; }
};

// The fast path: the breakdown alone (a Config converts to its Step; one Step serves memory and time).
MemoryEstimate estimate_memory(const Step&);
// The moments of the step the estimate describes (its pipeline stage), in order; a TRL trainer's phases are each
// one moment. Views into `m` for TRL: `m` outlives the result.
std::vector<Moment> step_timeline(const Step&, const MemoryEstimate& m);
// Largest micro_batch (all else equal) whose total fits the GPU; 0 when none does.
std::uint64_t max_micro_batch(const Config&);

}  // namespace vramcalc
