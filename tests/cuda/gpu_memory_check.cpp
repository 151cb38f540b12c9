// (b) The model-state memory vramcalc predicts, allocated for real. For a few configurations it asks the
// estimator (vramcalc::estimate_json) for per_gpu_bytes.{weights, gradients, optimizer_states, master_weights},
// cudaMallocs one buffer of each size, and compares the drop in cudaMemGetInfo's free memory with the prediction
// (cudaMalloc rounds each buffer up to 2 MiB pages, so the drop may exceed it by < 2 MiB a buffer). It also
// records the CUDA context's own footprint: total - free right after the context is created, before any
// allocation (that figure includes whatever other processes hold).
// Usage: gpu_memory_check [--out FILE.json]   exit 0 pass, 1 fail (or estimator unavailable), 77 no GPU.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_common.hpp"
#include "json/api.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

constexpr std::uint64_t kPage = 2ull << 20;
const char* const kBuffers[] = {"weights", "gradients", "optimizer_states", "master_weights"};

std::uint64_t bytes_of(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) return v.get<std::int64_t>() < 0 ? 0 : static_cast<std::uint64_t>(v.get<std::int64_t>());
    if (v.is_number_float()) return v.get<double>() < 0 ? 0 : static_cast<std::uint64_t>(v.get<double>() + 0.5);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (!gpu::have_gpu("gpu_memory_check")) return gpu::kSkip;
    const std::string out = gpu::arg(argc, argv, "--out", "gpu_memory.json");

    std::size_t free0 = 0, total = 0;
    VRAMCALC_CUDA_CHECK(cudaFree(nullptr));  // creates the primary context
    VRAMCALC_CUDA_CHECK(cudaMemGetInfo(&free0, &total));
    const std::uint64_t context = total - free0;
    std::printf("device total %.3f GiB, free after context creation %.3f GiB: context (+ other processes) %.1f MiB\n",
                total / 1073741824.0, free0 / 1073741824.0, context / 1048576.0);

    const std::vector<json> requests = {
        {{"model", "gpt2"}, {"gpu", "h200"}, {"precision", "32-true"}, {"optimizer", "adamw"}, {"seq_len", 1024}},
        {{"model", "gpt2"}, {"gpu", "h200"}, {"precision", "bf16-mixed"}, {"optimizer", "adamw"}, {"seq_len", 1024}},
        {{"model", "llama-3.2-1b"}, {"gpu", "h200"}, {"precision", "bf16-mixed"}, {"optimizer", "adamw"}},
        {{"model", "llama-2-7b"}, {"gpu", "h200"}, {"precision", "bf16-true"}, {"optimizer", "adamw"}},
        {{"model", "llama-2-7b"}, {"gpu", "h200"}, {"precision", "32-true"}, {"optimizer", "adamw"}},  // ~100 GiB
    };

    json results = json::array();
    bool all_ok = true;
    json context_predicted;  // per_gpu_bytes.cuda_context of the first estimate, if the estimator gives one
    for (const json& req : requests) {
        json r = {{"request", req}};
        const ApiResult est = estimate_json(req.dump());
        const json e = json::parse(est.json, nullptr, false);
        if (!est.ok || e.is_discarded() || !e.contains("per_gpu_bytes") || !e["per_gpu_bytes"].is_object()) {
            std::printf("%s: estimator gave no per_gpu_bytes: %.300s\n", req.dump().c_str(), est.json.c_str());
            r["error"] = "estimate_json gave no per_gpu_bytes";
            r["estimate"] = e.is_discarded() ? json(est.json) : e;
            results.push_back(r);
            all_ok = false;
            continue;
        }
        // Every model state is live at the optimizer step; the peak's breakdown may be an earlier moment.
        json pb = e["per_gpu_bytes"];
        if (context_predicted.is_null() && pb.contains("cuda_context")) context_predicted = pb["cuda_context"];
        for (const json& phase : e.value("phases", json::array()))
            if (phase.value("name", "") == "optimizer_step") pb = phase["per_gpu_bytes"];
        r["per_gpu_bytes"] = pb;
        std::uint64_t predicted = 0, rounded = 0;
        int buffers = 0;
        json parts = json::object();
        for (const char* k : kBuffers) {
            const std::uint64_t b = pb.contains(k) ? bytes_of(pb[k]) : 0;
            parts[k] = b;
            predicted += b;
            rounded += (b + kPage - 1) / kPage * kPage;
            buffers += b > 0;
        }
        r["model_state_bytes"] = parts;
        r["predicted_bytes"] = predicted;
        std::size_t free_before = 0, free_after = 0;
        VRAMCALC_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
        if (predicted + (256ull << 20) > free_before) {
            std::printf("%s: %.2f GiB predicted does not fit in %.2f GiB free: not allocated\n", req.dump().c_str(),
                        predicted / 1073741824.0, free_before / 1073741824.0);
            r["allocated"] = false;
            r["free_bytes"] = free_before;
            results.push_back(r);
            continue;
        }
        std::vector<void*> ptrs;
        bool alloc_ok = true;
        for (const char* k : kBuffers) {
            const std::uint64_t b = parts[k].get<std::uint64_t>();
            if (!b) continue;
            void* p = nullptr;
            const cudaError_t err = cudaMalloc(&p, b);
            if (err != cudaSuccess) {
                std::printf("cudaMalloc(%s, %llu) failed: %s\n", k, static_cast<unsigned long long>(b),
                            cudaGetErrorString(err));
                alloc_ok = false;
                break;
            }
            ptrs.push_back(p);
        }
        VRAMCALC_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
        for (void* p : ptrs) cudaFree(p);
        const std::int64_t used = static_cast<std::int64_t>(free_before) - static_cast<std::int64_t>(free_after);
        const std::int64_t over = used - static_cast<std::int64_t>(predicted);
        const bool ok = alloc_ok && over >= 0 && over < static_cast<std::int64_t>(kPage) * (buffers + 1);
        all_ok = all_ok && ok;
        r["allocated"] = alloc_ok;
        r["free_before"] = free_before;
        r["free_after"] = free_after;
        r["measured_bytes"] = used;
        r["measured_minus_predicted"] = over;
        r["predicted_rounded_to_2MiB_pages"] = rounded;
        r["pass"] = ok;
        std::printf("%-75s predicted %14llu B (%.3f GiB), cudaMemGetInfo drop %14lld B, difference %+lld B: %s\n",
                    req.dump().c_str(), static_cast<unsigned long long>(predicted), predicted / 1073741824.0,
                    static_cast<long long>(used), static_cast<long long>(over), ok ? "ok" : "MISMATCH");
        results.push_back(r);
    }
    if (!context_predicted.is_null())
        std::printf("CUDA context: measured %.1f MiB (total - free before any allocation), estimator %.1f MiB\n",
                    context / 1048576.0, bytes_of(context_predicted) / 1048576.0);
    gpu::write_json(out, {{"test", "estimator's model-state bytes allocated with cudaMalloc"},
                          {"device", gpu::device_info()},
                          {"total_bytes", total},
                          {"context_bytes_before_any_allocation", context},
                          {"context_bytes_predicted", context_predicted},
                          {"pass", all_ok},
                          {"results", results}});
    std::printf("gpu_memory_check: %s\n", all_ok ? "PASS" : "FAIL");
    return all_ok ? 0 : 1;
}
