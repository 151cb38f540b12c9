// Finding a model from what people type: any case, any separators ("-", "_", ".", " ", "/"), the organisation left
// out ("Qwen3-8B"), version and size in any order ("llama 3.1 8b", "Meta-Llama-3.1-8B-Instruct"), a hub URL, small
// typos. Searches the presets and the bundled catalog; the one place model text is matched.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vramcalc {

// exact: names the model (every word and number of its name, nothing it lacks); prefix: the text starts its words
// (what a search box holds while typing); fuzzy: within a small typo of its words.
enum class MatchKind { exact, prefix, fuzzy };
const char* match_name(MatchKind);

struct ModelMatch {
    std::string id;    // a preset id or a catalog id, as the configuration's "model" takes it
    std::string name;  // the preset's published name, or the catalog id without its organisation
    std::uint64_t parameters = 0;
    MatchKind match = MatchKind::fuzzy;
};

// Best first: exact, then prefix, then fuzzy matches; within each, the id typed itself, then the closest (fewest
// words of the model's name the text leaves out, fewest typos), the catalog before the presets, then by id. At most
// `limit` results.
std::vector<ModelMatch> search_models(const std::string& query, std::size_t limit);

// The catalog ids `text` names exactly (what a configuration's "model" reads when it is no preset or catalog id as
// given): one when the spelling is unambiguous. Presets keep their exact ids.
std::vector<std::string> exact_models(const std::string& text);

}  // namespace vramcalc
