#include "json/scenarios.hpp"

namespace vramcalc {

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> table = {
        {"7b-zero2-offload-a100-80gb", "Llama 2 7B full fine-tune on one A100 80GB: ZeRO-2, optimizer on CPU, checkpointing",
         R"({"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed","zero":2,)"
         R"("offload":"optimizer","checkpointing":"full","seq_len":2048,"micro_batch":4})"},
        {"13b-zero3-offload-2xa100", "Llama 2 13B on 2x A100 80GB: ZeRO-3 with optimizer and parameters on CPU",
         R"({"model":"llama-2-13b","gpu":"a100-80gb","gpus":2,"precision":"bf16-mixed","strategy":"deepspeed",)"
         R"("zero":3,"offload":"optimizer+params","checkpointing":"full","seq_len":2048,"micro_batch":4})"},
        {"30b-fsdp-4xa100", "LLaMA 33B on 4x A100 80GB, fully sharded (FSDP FULL_SHARD) with CPU offload and checkpointing",
         R"({"model":"llama-30b","gpu":"a100-80gb","gpus":4,"precision":"bf16-mixed","strategy":"fsdp","zero":3,)"
         R"("offload":"optimizer+params","checkpointing":"full","seq_len":2048,"micro_batch":1})"},
    };
    return table;
}

}  // namespace vramcalc
