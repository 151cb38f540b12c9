// vramcalc: JSON in, JSON out. Exit 0 on success, 2 on bad input (one line per problem on stderr).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "advice/planner.hpp"
#include "json/api.hpp"

namespace {

const char* kUsage =
    "usage: vramcalc estimate FILE|- [--table]   per-GPU memory of a training run\n"
    "       vramcalc estimate FILE|- --timeline   the step's moments in order, live bytes by category\n"
    "       vramcalc plan FILE|-                  the estimate with its plans: the fastest combinations of changes that fit\n"
    "       vramcalc sizing FILE|-                which GPUs to rent, how many: each with its fastest plan, hours and cost\n"
    "       vramcalc sweep FILE|-                 peak memory over a micro_batch x seq_len grid\n"
    "       vramcalc deepspeed FILE|-             a DeepSpeed config matching the settings\n"
    "       vramcalc exports FILE|-               every launch config and command that fits the settings\n"
    "       vramcalc export ID FILE|-             the text of one of them (deepspeed, accelerate, training-arguments,\n"
    "                                             torchrun, litgpt, torchtune, megatron)\n"
    "       vramcalc adamw FILE|-                 the scalar AdamW reference step\n"
    "       vramcalc presets                      model presets, GPU catalog, worked scenarios\n"
    "       vramcalc models --search TEXT         the ten presets and catalog models TEXT best matches\n"
    "       vramcalc schema [--markdown]          every configuration key: type, bounds, default, when it applies\n"
    "       vramcalc describe FILE|-              every key's default given the others, the model's LoRA targets\n"
    "       vramcalc bench [SECONDS]              estimates per second\n";

bool read_input(const std::string& path, std::string& out) {
    if (path == "-") {
        std::ostringstream s;
        s << std::cin.rdbuf();
        out = s.str();
        return true;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    out = s.str();
    return true;
}

int print_result(const vramcalc::ApiResult& r, bool table) {
    if (r.ok) {
        std::cout << (table ? vramcalc::cli::format_table(r.json) : r.json + "\n");
        return 0;
    }
    const nlohmann::json errors = nlohmann::json::parse(r.json, nullptr, false);
    for (const auto& e : errors["errors"]) {
        const std::string field = e["field"].get<std::string>();
        std::cerr << "error: " << (field.empty() ? "" : field + ": ") << e["message"].get<std::string>() << "\n";
    }
    return 2;
}

// `export ID FILE|-`: the export's text; exit 1 when it does not apply to the configuration.
int print_export(const std::string& id, const std::string& input) {
    const std::string ids = "deepspeed, accelerate, training-arguments, torchrun, litgpt, torchtune, megatron";
    if ((", " + ids + ", ").find(", " + id + ", ") == std::string::npos) {
        std::cerr << "error: unknown export " << nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "; exports: " << ids << "\n";
        return 2;
    }
    const vramcalc::ApiResult r = vramcalc::exports_json(input);
    if (!r.ok) return print_result(r, false);
    const nlohmann::json exports = nlohmann::json::parse(r.json)["exports"];
    std::string offered;
    for (const auto& e : exports) {
        if (e["id"] == id) {
            std::cout << e["text"].get<std::string>();
            return 0;
        }
        offered += (offered.empty() ? "" : ", ") + e["id"].get<std::string>();
    }
    std::cerr << "error: the export " << id << " does not apply to this configuration; it offers: "
              << (offered.empty() ? "none" : offered) << "\n";
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "export" && argc == 4) {
        std::string input;
        if (!read_input(argv[3], input)) {
            std::cerr << "error: cannot read " << argv[3] << "\n";
            return 2;
        }
        return print_export(argv[2], input);
    }
    if (cmd == "presets" && argc == 2) {
        std::cout << vramcalc::presets_json() << "\n";
        return 0;
    }
    if (cmd == "models" && argc == 4 && std::string(argv[2]) == "--search")
        return print_result(vramcalc::search_models_json(argv[3], 10), false);
    if (cmd == "schema" && (argc == 2 || (argc == 3 && std::string(argv[2]) == "--markdown"))) {
        std::cout << (argc == 2 ? vramcalc::schema_text() + "\n" : vramcalc::schema_markdown_text());
        return 0;
    }
    if (cmd == "bench" && argc <= 3) return vramcalc::cli::bench(argc == 3 ? std::atof(argv[2]) : 1.0);
    const bool table = argc == 4 && std::string(argv[3]) == "--table" && cmd == "estimate";
    const bool timeline = argc == 4 && std::string(argv[3]) == "--timeline" && cmd == "estimate";
    if ((cmd == "estimate" || cmd == "plan" || cmd == "sizing" || cmd == "sweep" || cmd == "deepspeed" || cmd == "exports" || cmd == "adamw" || cmd == "describe") &&
        (argc == 3 || table || timeline)) {
        std::string input;
        if (!read_input(argv[2], input)) {
            std::cerr << "error: cannot read " << argv[2] << "\n";
            return 2;
        }
        if (timeline) return print_result(vramcalc::timeline_json(input), false);
        if (cmd == "estimate") return print_result(vramcalc::estimate_json(input, &vramcalc::make_plans), table);
        if (cmd == "plan") return print_result(vramcalc::plan_json(input), false);
        if (cmd == "sizing") return print_result(vramcalc::sizing_json(input), false);
        if (cmd == "sweep") return print_result(vramcalc::sweep_json(input), false);
        if (cmd == "deepspeed") return print_result(vramcalc::deepspeed_json(input), false);
        if (cmd == "exports") return print_result(vramcalc::exports_json(input), false);
        if (cmd == "describe") {
            std::cout << vramcalc::describe_json(input).json << "\n";  // its problems are part of the answer
            return 0;
        }
        return print_result(vramcalc::adamw_json(input), false);
    }
    std::cerr << kUsage;
    return 2;
}
