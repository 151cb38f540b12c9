// What an estimate rests on: the committed measurements that cover this kind of run (with the estimator's
// error on them) and the terms that are allowances, not yet measured. The cases are the validation data
// itself, turned into C++ rows at build time (core/evidence/gen_evidence.py).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/estimate.hpp"
#include "setup/config.hpp"

namespace vramcalc {

// Cases of one set that share the same keys with the configuration. Every case shares its fine-tuning method
// and strategy (tp, pp and cp > 1 included); `matches` lists the keys shared, of: family (model_type and MoE
// or not), framework (the stack's profile), precision, method, strategy, checkpointing.
struct EvidenceGroup {
    std::string group;     // the keys shared, in words
    std::string source;    // "cpu": measured on PyTorch's CPU kernels with the real framework code; "gpu": published
    std::string set;       // the set's name
    std::string file;      // its file in the repository
    std::string versions;  // what ran: package versions, or the published sources (repo path @commit)
    std::vector<std::string> matches;
    std::size_t cases = 0;     // all cases of the group
    std::size_t compared = 0;  // cases with a measured or published figure: the error statistics' count
    std::size_t ran = 0;       // published runs without a figure (or with an optimisation not modelled): they ran
    std::size_t ran_fit = 0;   // of those, estimated to fit their GPU
    // |estimate - measured| / measured in percent over the compared cases, as tests/validation/accuracy prints
    // it (peak_allocated_bytes) and as published/evaluate.py computes it (each row's counter).
    double median_error = 0, max_error = 0;
};

// A term of this estimate that no committed measurement pins down: an allowance, a term read from code only,
// a bound, or something left out (bytes 0).
struct Allowance {
    std::string term;
    double bytes = 0;
    std::string why;
};

struct Evidence {
    std::vector<EvidenceGroup> measured;  // closest match first, at most kMaxEvidenceGroups
    std::size_t more_groups = 0, more_cases = 0;  // looser groups left out of `measured`
    std::vector<Allowance> allowances;
    std::string summary;  // one sentence
};

constexpr std::size_t kMaxEvidenceGroups = 6;

// For a configuration and its estimate. A case is parsed once, the first time a configuration of its kind (method
// and strategy) is asked about, and estimated once, the first time its group is shown; thread-safe.
Evidence evidence(const Config&, const MemoryEstimate&);
// The "evidence" object of the estimate's JSON: {"measured": [...], "allowances": [...], "summary": "..."}.
nlohmann::json evidence_for(const Config&, const MemoryEstimate&);
nlohmann::json evidence_to_json(const Evidence&);

// For tests: parses every case; how many there are, how many the current format refuses, and how many whose
// generated method, strategy or tp/pp/cp bits (what spares parsing other kinds) disagree with the parsed one.
struct EvidenceSelfCheck {
    std::size_t cases = 0, refused = 0, kind_mismatches = 0;
};
EvidenceSelfCheck evidence_self_check();

}  // namespace vramcalc
