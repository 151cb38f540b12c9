// Replays trajectory files written by tests/validation/adamw/make_trajectories.py through the CPU reference
// (core/reference/adamw.hpp) and reports, per case, the max ulp distance and the elements that are not bit-identical.
// It also tries the reference's two build-dependent switches (addcmul_ contracted to an FMA or not; the bias
// correction's square root as math.sqrt or **0.5) so a mismatch says which torch arithmetic it was.
// Usage: adamw_replay FILE... [--out FILE.json]
//   exit 0 when every case of the first FILE matches bit for bit with the default switches, else 1.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../validation/adamw/replay.hpp"

using namespace vramcalc;
using nlohmann::json;

int main(int argc, char** argv) {
    std::vector<std::string> files;
    std::string out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--out" && i + 1 < argc)
            out = argv[++i];
        else
            files.push_back(a);
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: adamw_replay TRAJECTORIES.json... [--out FILE.json]\n");
        return 2;
    }
    bool first_ok = true;
    json report = json::array();
    for (std::size_t f = 0; f < files.size(); ++f) {
        std::ifstream in(files[f]);
        std::stringstream ss;
        ss << in.rdbuf();
        const json doc = json::parse(ss.str(), nullptr, false);
        if (doc.is_discarded() || !doc.contains("cases")) {
            std::printf("%s: not a trajectory file\n", files[f].c_str());
            report.push_back({{"file", files[f]}, {"error", "not a trajectory file"}});
            if (f == 0) first_ok = false;
            continue;
        }
        std::printf("%s (torch %s, %s)\n", files[f].c_str(), doc.value("torch_version", "?").c_str(),
                    doc.value("impl", "single-tensor cpu").c_str());
        json cases = json::array();
        std::uint32_t worst = 0;
        for (const auto& c : doc["cases"]) {
            json alts = json::object();
            adamw_replay::CaseResult base;
            for (int fma = 1; fma >= 0; --fma) {
                for (int pw = 0; pw <= 1; ++pw) {
                    adamw_replay::Overrides ov;
                    ov.addcmul_fma = fma;
                    ov.bc2_sqrt_via_pow = pw;
                    const auto r = adamw_replay::replay_case(c, ov);
                    const std::string key = std::string(fma ? "addcmul_fma" : "addcmul_nofma") + (pw ? "+pow" : "+sqrt");
                    alts[key] = {{"max_ulp", r.max_ulp}, {"bit_differences", r.bit_differences}};
                    if (fma == 1 && pw == 0) base = r;
                }
            }
            worst = std::max(worst, base.max_ulp);
            std::printf("  %-40s %-10s max %u ulp, %ld of %ld not bit-identical\n", base.name.c_str(),
                        base.variant.c_str(), base.max_ulp, base.bit_differences, base.compared);
            for (const auto& m : base.mismatches) std::printf("      %s\n", m.c_str());
            cases.push_back({{"name", base.name}, {"variant", base.variant}, {"max_ulp", base.max_ulp},
                             {"bit_differences", base.bit_differences}, {"compared", base.compared},
                             {"first_mismatches", base.mismatches}, {"switches", alts}});
            if (f == 0 && base.bit_differences) first_ok = false;
        }
        std::printf("  max %u ulp\n", worst);
        report.push_back({{"file", files[f]}, {"torch_version", doc.value("torch_version", "?")},
                          {"impl", doc.value("impl", "single-tensor cpu")}, {"max_ulp", worst}, {"cases", cases}});
    }
    if (!out.empty()) {
        std::ofstream o(out);
        o << json({{"test", "CPU reference vs torch AdamW trajectories"}, {"files", report}}).dump(1) << "\n";
    }
    std::printf("adamw_replay: %s\n", first_ok ? "PASS (first file bit-identical)" : "FAIL");
    return first_ok ? 0 : 1;
}
