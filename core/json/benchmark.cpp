#include "json/benchmark.hpp"

#include <chrono>

#include "memory/estimate.hpp"

namespace vramcalc {

double calls_per_second(double seconds, const std::function<void(int)>& work) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    double calls = 0, elapsed = 0;
    do {
        for (int i = 0; i < 256; ++i) work(i);
        calls += 256;
        elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < seconds);
    return calls / elapsed;
}

double fastest_call_seconds(int calls, const std::function<void()>& work) {
    using clock = std::chrono::steady_clock;
    double fastest = 0;
    for (int i = 0; i < calls; ++i) {
        const auto start = clock::now();
        work();
        const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
        if (i == 0 || elapsed < fastest) fastest = elapsed;
    }
    return fastest;
}

double breakdowns_per_second(Config config, double seconds) {
    volatile double sink = 0;
    return calls_per_second(seconds, [&](int i) {
        config.micro_batch = 1 + std::uint64_t(i & 7);
        sink = sink + estimate_memory(config).total;
    });
}

}  // namespace vramcalc
