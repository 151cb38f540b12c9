#include "model/model_search.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "input/field_error.hpp"
#include "model/hf_config.hpp"
#include "model/model_catalog.hpp"
#include "model/presets.hpp"

namespace vramcalc {

namespace {

constexpr std::size_t kMaxQuery = 512;

bool digit(char c) { return c >= '0' && c <= '9'; }
bool letter(char c) { return c >= 'a' && c <= 'z'; }

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// "https://huggingface.co/Qwen/Qwen3-8B/tree/main" -> "qwen/qwen3-8b": lower case, a hub URL's id.
std::string without_url(const std::string& text) {
    std::string s = lower(text);
    s.erase(0, s.find_first_not_of(' '));
    for (const char* prefix : {"https://", "http://", "www.", "huggingface.co/", "hf.co/"})
        if (starts_with(s, prefix)) s.erase(0, std::string(prefix).size());
    if (const std::size_t slash = s.find('/'); slash != std::string::npos) s = s.substr(0, s.find('/', slash + 1));
    while (!s.empty() && (s.back() == ' ' || s.back() == '/')) s.pop_back();
    return s;
}

// Only letters and digits: "Llama-3.1_8B" -> "llama318b".
std::string squashed(const std::string& s) {
    std::string out;
    for (char c : lower(s))
        if (letter(c) || digit(c)) out += c;
    return out;
}

// Words and numbers, split at every separator and where digits follow letters; a number keeps its decimals and
// the letters after it: "Meta-Llama-3.1-8B-Instruct" -> meta llama 3.1 8b instruct, "Qwen3-30B-A3B" -> qwen 3 30b a 3b.
std::vector<std::string> tokens(const std::string& text) {
    const std::string s = lower(text);
    std::vector<std::string> out;
    std::string word;
    const auto flush = [&] {
        if (!word.empty()) out.push_back(word);
        word.clear();
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '.' && !word.empty() && digit(word.back()) && i + 1 < s.size() && digit(s[i + 1])) {
            word += c;
        } else if (!letter(c) && !digit(c)) {
            flush();
        } else {
            if (digit(c) && !word.empty() && letter(word.back())) flush();
            word += c;
        }
    }
    flush();
    return out;
}

bool is_word(const std::string& token) { return letter(token[0]); }

// Optimal string alignment distance between a and b's first n characters: edits and adjacent transpositions.
std::size_t typos(const std::string& a, const std::string& b, std::size_t n) {
    const std::size_t w = n + 1;
    std::vector<std::size_t> d((a.size() + 1) * w);
    for (std::size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
    for (std::size_t j = 0; j <= n; ++j) d[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= n; ++j) {
            std::size_t& x = d[i * w + j];
            x = std::min(std::min(d[(i - 1) * w + j], d[i * w + j - 1]) + 1, d[(i - 1) * w + j - 1] + (a[i - 1] != b[j - 1]));
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) x = std::min(x, d[(i - 2) * w + j - 2] + 1);
        }
    return d.back();
}

struct Candidate {
    std::string id, name;
    const ModelPreset* preset = nullptr;
    const CatalogModel* model = nullptr;
    std::string whole, short_name;       // squashed id, squashed id without its organisation
    std::vector<std::string> all, core;  // the id's tokens; those of its name that its organisation lacks
};

Candidate candidate(const std::string& id, const std::string& name) {
    Candidate c;
    c.id = id, c.name = name;
    const std::size_t slash = id.find('/');
    const std::string org = slash == std::string::npos ? "" : id.substr(0, slash);
    const std::string rest = slash == std::string::npos ? id : id.substr(slash + 1);
    c.whole = squashed(id), c.short_name = squashed(rest), c.all = tokens(id);
    const std::vector<std::string> org_tokens = tokens(org);
    for (const std::string& t : tokens(rest))
        if (!contains(org_tokens, t) && !contains(c.core, t)) c.core.push_back(t);
    return c;
}

const std::vector<Candidate>& candidates() {
    static const std::vector<Candidate> table = [] {
        const std::vector<ModelPreset>& presets = model_presets();
        const std::vector<CatalogModel>& catalog = model_catalog();
        std::vector<Candidate> out(presets.size() + catalog.size());
        for (std::size_t i = 0; i < presets.size(); ++i) {
            out[i] = candidate(presets[i].arch.id, presets[i].name);
            out[i].preset = &presets[i];
        }
        for (std::size_t i = 0; i < catalog.size(); ++i) {
            const std::string id = catalog[i].id;
            Candidate& c = out[presets.size() + i];
            c = candidate(id, id.substr(id.find('/') + 1));
            c.model = &catalog[i];
        }
        return out;
    }();
    return table;
}

struct Query {
    std::string whole;
    std::vector<std::string> tokens;
};

Query query(const std::string& text) {
    if (text.size() > kMaxQuery) return {};
    const std::string s = without_url(text);
    return {squashed(s), tokens(s)};
}

// Every word and number of the model's name and nothing it lacks (its organisation may be left out), with a word
// among them; or the same letters and digits as its id.
bool names(const Query& q, const Candidate& c) {
    if (q.whole.empty()) return false;
    if (q.whole == c.whole || q.whole == c.short_name) return true;
    if (std::none_of(q.tokens.begin(), q.tokens.end(), is_word)) return false;
    for (const std::string& t : q.tokens)
        if (!contains(c.all, t)) return false;
    for (const std::string& t : c.core)
        if (!contains(q.tokens, t)) return false;
    return true;
}

bool starts(const Query& q, const Candidate& c) {
    if (starts_with(c.whole, q.whole) || starts_with(c.short_name, q.whole)) return true;
    return std::all_of(q.tokens.begin(), q.tokens.end(), [&](const std::string& t) {
        return std::any_of(c.all.begin(), c.all.end(), [&](const std::string& u) { return starts_with(u, t); });
    });
}

// The typos between the query's tokens and the model's (each token matched to its closest, or to the start of
// one); more than one per short token or two per long one, or three in all: no match (returns 0).
std::size_t typo_cost(const Query& q, const Candidate& c) {
    std::size_t total = 0;
    for (const std::string& t : q.tokens) {
        const std::size_t allowed = t.size() <= 4 ? 1 : 2;
        std::size_t best = allowed + 1;
        for (const std::string& u : c.all) {
            // The whole token, or its start: lengths further apart than the typos allowed never match.
            if (u.size() <= t.size() + allowed && t.size() <= u.size() + allowed) best = std::min(best, typos(t, u, u.size()));
            if (u.size() > t.size()) best = std::min(best, typos(t, u, t.size()));
        }
        if (best > allowed) return 0;
        total += best;
    }
    return total <= 3 ? total : 0;
}

std::uint64_t parameters(const Candidate& c) {
    if (c.preset) return total_params(c.preset->arch);
    Architecture a;
    std::vector<FieldError> errors;
    std::vector<std::string> notes;
    read_hf_config(nlohmann::json::parse(c.model->config), a, "", errors, notes);
    return errors.empty() ? total_params(a) : 0;
}

}  // namespace

const char* match_name(MatchKind m) { return m == MatchKind::exact ? "exact" : m == MatchKind::prefix ? "prefix" : "fuzzy"; }

std::vector<ModelMatch> search_models(const std::string& text, std::size_t limit) {
    const Query q = query(text);
    if (q.tokens.empty()) return {};
    const std::string typed = without_url(text);
    // The rank packed into one number (kind, not the id typed, name words left out, typos, a preset, the id's
    // length), ties in the table's order (presets, then the catalog by id).
    std::vector<std::pair<std::uint64_t, std::size_t>> ranked;
    const std::vector<Candidate>& table = candidates();
    for (std::size_t i = 0; i < table.size(); ++i) {
        const Candidate& c = table[i];
        MatchKind kind = MatchKind::fuzzy;
        std::size_t cost = 0;
        if (names(q, c)) kind = MatchKind::exact;
        else if (starts(q, c)) kind = MatchKind::prefix;
        else if ((cost = typo_cost(q, c)) == 0) continue;
        std::uint64_t missing = 0;
        for (const std::string& t : c.core) missing += !contains(q.tokens, t);
        const std::uint64_t rank = std::uint64_t(kind) << 40 | std::uint64_t(lower(c.id) != typed) << 39 |
                                   std::min<std::uint64_t>(missing, 255) << 31 | std::uint64_t(cost) << 28 |
                                   std::uint64_t(c.preset != nullptr) << 27 | std::min<std::uint64_t>(c.id.size(), 1023);
        ranked.push_back({rank, i});
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<ModelMatch> out;
    for (std::size_t i = 0; i < ranked.size() && i < limit; ++i) {
        const Candidate& c = table[ranked[i].second];
        out.push_back({c.id, c.name, parameters(c), MatchKind(ranked[i].first >> 40)});
    }
    // Another organisation's copy ("unsloth/Qwen3-8B"): the models of that name, as fuzzy matches.
    if (const std::size_t slash = typed.find('/'); out.empty() && slash != std::string::npos) {
        out = search_models(typed.substr(slash + 1), limit);
        for (ModelMatch& m : out) m.match = MatchKind::fuzzy;
    }
    return out;
}

std::vector<std::string> exact_models(const std::string& text) {
    const Query q = query(text);
    std::vector<std::string> ids;
    for (const Candidate& c : candidates())
        if (c.model && names(q, c)) ids.push_back(c.id);
    return ids;
}

}  // namespace vramcalc
