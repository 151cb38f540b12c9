// What loading a QLoRA model leaves reserved: the loading's allocations against closed forms of the code they follow
// (torchao's NF4Tensor at v0.1 and v0.8, bitsandbytes' 4-bit quantization at 0.49, transformers 5.18's warmup),
// and the replay against torchtune's QLoRA tutorial (docs/source/tutorials/qlora_finetune.rst, torchtune 0.1.0 with
// torchao 0.1: "Memory Stats after model init", 9.13 GB reserved; 9.29 GB reserved in training).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "memory/caching_allocator.hpp"
#include "memory/estimate.hpp"
#include "memory/model_loading.hpp"
#include "model/architecture.hpp"
#include "parsed_config.hpp"

using namespace vramcalc;

namespace {

// The largest number of bytes alive at once, and what stays allocated, of an event sequence.
struct Live {
    std::uint64_t peak = 0, end = 0;
};
Live live(const std::vector<AllocEvent>& events) {
    std::vector<std::uint64_t> size;
    Live l;
    std::uint64_t now = 0;
    for (const AllocEvent& e : events) {
        if (e.op == AllocOp::allocate) {
            if (size.size() <= e.tensor) size.resize(e.tensor + 1);
            size[e.tensor] = e.bytes;
            now += e.bytes;
            l.peak = std::max(l.peak, now);
        } else if (e.op == AllocOp::free) {
            now -= size[e.tensor];
        }
    }
    l.end = now;
    return l;
}

// The tutorial's run (tests/validation/published/configs.jsonl, tt-tut-qlora-l2-7b-qlora-training).
nlohmann::json llama2_7b_qlora(const char* framework, const char* version) {
    return {{"model", "meta-llama/Llama-2-7b-hf"}, {"framework", framework}, {"framework_version", version},
            {"finetune", {{"method", "qlora"}, {"targets", {"q_proj", "v_proj", "k_proj", "output_proj", "w1", "w2", "w3"}},
                          {"dropout", 0.05}}},
            {"gpu", "a100-80gb"}, {"seq_len", 512}, {"micro_batch", 2}, {"checkpointing", "full"}, {"loss", "full"}};
}

}  // namespace

TEST_CASE("model loading: torchtune 0.1's QLoRA init and load, torchao 0.1's NF4 tensors") {
    const Config c = parsed(llama2_7b_qlora("torchtune", "2024-04-15"));
    const Architecture& a = c.model;
    const std::vector<AllocEvent> events = model_loading_events(c);
    REQUIRE_FALSE(events.empty());
    // What stays: every linear weight of the layers as torchao 0.1's NF4Tensor keeps it (nf4tensor.py: the packed
    // data n/2, int8 scalers per 64-element block, and the factor, a column view of a bf16 per-block tensor), the
    // embedding, norms and output in bf16.
    double nf4 = 0;
    for (const Linear& l : layer_linears(a)) {
        const double n = double(l.in * l.out * l.count);
        nf4 += n / 2 + n / 64 + 2 * n / 64;
    }
    const double kept = nf4 * double(a.layers) + 2.0 * double(total_params(a) - linear_weight_params(a));
    CHECK(double(live(events).end) == Approx(kept).epsilon(1e-6));
    // The peak: everything loaded but the last layer's largest weight, which is then alive as its bf16 copy, its
    // scaled blocks and |w - code| with its abs (2n + 2n + 32n + 32n), besides the old NF4 tensors it replaces.
    const double largest = double(a.hidden) * double(a.ffn);
    CHECK(double(live(events).peak) >= kept + 68 * largest);
    CHECK(double(live(events).peak) <= kept + 68 * largest + 0.05 * kept);

    // The replay: reserved after loading against the tutorial's 9.13 GB (8.50 GiB). It comes out 13% lower; what
    // the rest is was not found in torchtune 0.1's recipe or torchao 0.1 (no GPU to take a snapshot on).
    const std::optional<LoadedModel> loaded = loaded_model(c);
    REQUIRE(loaded);
    CHECK(double(loaded->reserved) > 0.85 * 9.13e9);
    CHECK(double(loaded->reserved) < 9.13e9);
    CHECK(double(loaded->allocated) == Approx(double(live(events).end)).epsilon(0.005));  // blocks: 512-byte multiples
    // It is the step's reserved floor: the training step reuses the freed blocks (the tutorial: 9.29 GB in training).
    const MemoryEstimate m = estimate_memory(c);
    CHECK(m.peak_reserved == Approx(double(loaded->reserved)));
    CHECK(m.peak_reserved < 9.29e9);
}

TEST_CASE("model loading: torchao from 0.3 searches the codes in chunks, torchtune 0.2 and later") {
    const Config old = parsed(llama2_7b_qlora("torchtune", "2024-04-15"));
    const Config chunked = parsed(llama2_7b_qlora("torchtune", "0.2.0"));
    const Live whole = live(model_loading_events(old)), chunks = live(model_loading_events(chunked));
    // The kept tensors differ only by the factor (torchao 0.8: per 256 blocks); the chunked peak, loading the
    // checkpoint's copy of the largest weight (2n), is |w| and the scaled blocks (4n), the codes (n), the fresh
    // tensors (about n/2) and one chunk's 64 MiB of differences on top of the loaded model, not 68n.
    const double largest = double(old.model.hidden) * double(old.model.ffn);
    CHECK(chunks.end < whole.end);
    CHECK(double(chunks.peak) <= double(chunks.end) + 8 * largest + 64.0 * 1024 * 1024);
    CHECK(loaded_model(chunked)->reserved < loaded_model(old)->reserved);
}

TEST_CASE("model loading: transformers 5.18 with bitsandbytes 4-bit, and PEFT's fp32 casts") {
    nlohmann::json j = llama2_7b_qlora("hf", "5.18");
    j["finetune"].erase("targets");  // PEFT's default, the model's own q_proj and v_proj
    const Config c = parsed(j);
    const Architecture& a = c.model;
    const std::vector<AllocEvent> events = model_loading_events(c);
    REQUIRE_FALSE(events.empty());
    // caching_allocator_warmup's one block: half a byte per 4-bit element, two per 16-bit one (param_element_size).
    const double linear = double(linear_weight_params(a)), other = double(total_params(a)) - linear;
    REQUIRE(events[0].op == AllocOp::allocate);
    CHECK(double(events[0].bytes) == Approx(linear / 2 + 2 * other).epsilon(1e-9));
    // What stays, per weight (bitsandbytes 0.49 functional.py quantize_4bit with nested quantization): packed n/2,
    // the uint8 absmax per 64, the fp32 nested absmax per 256 blocks, the code, offset and nested code; the rest
    // cast to fp32 by prepare_model_for_kbit_training (bf16-mixed).
    double kept = 4 * other;
    for (const Linear& l : layer_linears(a)) {
        const double n = double(l.in * l.out), nb = std::ceil(n / 64), ns = std::ceil(nb / 256);
        kept += double(l.count * a.layers) * (n / 2 + nb + 4 * ns + 64 + 4 + 1024);
    }
    CHECK(double(live(events).end) == Approx(kept).epsilon(1e-6));
    // Its reserved memory stays below the step's own here: the estimate is the step's.
    const MemoryEstimate m = estimate_memory(c);
    CHECK(m.loading_reserved > double(live(events).end));
    CHECK(m.peak_reserved > m.loading_reserved);
}

TEST_CASE("model loading: not replayed where no quantizing load runs") {
    for (const nlohmann::json& j : {
             nlohmann::json{{"model", "llama-2-7b"}, {"finetune", {{"method", "lora"}}}},
             nlohmann::json{{"model", "llama-2-7b"}, {"finetune", {{"method", "qlora"}}}, {"device", "cpu"}},
             nlohmann::json{{"model", "llama-2-7b"}, {"finetune", {{"method", "qlora"}}}, {"framework", "litgpt"}},
             nlohmann::json{{"model", "llama-2-7b"}, {"finetune", {{"method", "qlora"}}}, {"gpus", 2}, {"strategy", "fsdp"}},
         }) {
        INFO(j.dump());
        const Config c = parsed(j);
        CHECK(model_loading_events(c).empty());
        CHECK(estimate_memory(c).loading_reserved == 0);
    }
}

TEST_CASE("model loading: the replay follows PYTORCH_CUDA_ALLOC_CONF") {
    nlohmann::json j = llama2_7b_qlora("torchtune", "2024-04-15");
    const std::uint64_t plain = loaded_model(parsed(j))->reserved;
    // Expandable segments grow one mapping per pool instead of a segment per large request: the freed temporaries'
    // pages are reused in place. A split limit keeps the temporaries' blocks above it whole.
    j["alloc_conf"] = "expandable_segments:True";
    CHECK(loaded_model(parsed(j))->reserved < plain);
    j["alloc_conf"] = "max_split_size_mb:128";
    CHECK(loaded_model(parsed(j))->reserved > plain);
}
