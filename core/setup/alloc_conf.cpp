#include "setup/alloc_conf.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace vramcalc {

namespace {

bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

int floor_log2(std::uint64_t v) {
    int n = -1;
    for (; v != 0; v >>= 1) ++n;
    return n;
}

std::string release_name(TorchRelease r) { return std::to_string(r.major) + "." + std::to_string(r.minor); }

// c10/core/AllocatorConfig.h ConfigTokenizer: ',', ':', '[' and ']' are tokens of their own, whitespace is dropped.
std::vector<std::string> tokenize(const std::string& text) {
    std::vector<std::string> tokens;
    std::string word;
    for (char ch : text) {
        if (ch == ',' || ch == ':' || ch == '[' || ch == ']') {
            if (!word.empty()) tokens.push_back(std::move(word));
            word.clear();
            tokens.emplace_back(1, ch);
        } else if (!std::isspace(static_cast<unsigned char>(ch))) {
            word += ch;
        }
    }
    if (!word.empty()) tokens.push_back(std::move(word));
    return tokens;
}

enum class Kind { limit_mb, segment_mb, fraction, divisions, boolean, backend, threads, positive };

// One row per option: how its value is read and the release that brought it.
struct Option {
    const char* name;
    Kind kind;
    TorchRelease since;
};

// The release each device option came in: max_non_split_rounding_mb PR #136174 (merged 2024-09, 2.6);
// large_segment_size_mb PR #172056 (2026-01, 2.11); expandable_segments 2.1 (Note [Expandable Segments]); the list
// form of roundup_power2_divisions PR #87290 (2022-11, 2.0). per_process_memory_fraction, graph_capture_record_stream_reuse
// and throw_on_cudamalloc_oom are read from torch 2.13's CUDAAllocatorConfig.h (getKeys), their first release not
// pinned here. The lock's and the pinned host allocator's options leave device memory alone: checked, in every release.
const Option kOptions[] = {
    {"max_split_size_mb", Kind::limit_mb, {2, 0}},
    {"max_non_split_rounding_mb", Kind::limit_mb, {2, 6}},
    {"large_segment_size_mb", Kind::segment_mb, {2, 11}},
    {"garbage_collection_threshold", Kind::fraction, {2, 0}},
    {"per_process_memory_fraction", Kind::fraction, {2, 13}},
    {"roundup_power2_divisions", Kind::divisions, {2, 0}},
    {"expandable_segments", Kind::boolean, {2, 1}},
    {"backend", Kind::backend, {2, 0}},
    // The lock and the pinned host allocator: checked, no effect on device memory.
    {"release_lock_on_cudamalloc", Kind::boolean, {2, 0}},
    {"pinned_use_cuda_host_register", Kind::boolean, {2, 0}},
    {"pinned_num_register_threads", Kind::threads, {2, 0}},
    {"pinned_use_background_threads", Kind::boolean, {2, 0}},
    {"pinned_max_round_threshold_mb", Kind::positive, {2, 0}},
    {"pinned_max_cached_size_mb", Kind::positive, {2, 0}},
    {"pinned_reserve_segment_size_mb", Kind::positive, {2, 0}},
    {"pinned_free_catch_all", Kind::boolean, {2, 0}},
    {"graph_capture_record_stream_reuse", Kind::boolean, {2, 13}},
    {"throw_on_cudamalloc_oom", Kind::boolean, {2, 13}},
};

class Parser {
public:
    Parser(const std::string& text, TorchRelease release, std::vector<FieldError>& errors)
        : t_(tokenize(text)), release_(release), errors_(errors) {}

    bool run(AllocConf& c) {
        for (std::size_t i = 0; i < t_.size() && ok_; ++i) {
            if (t_[i] == ",") return fail("an empty option before a ','");
            const Option* o = find(t_[i]);
            if (!o) return fail("unknown option \"" + t_[i] + "\"; options: " + names());
            if (!release_.at_least(o->since.major, o->since.minor))
                return fail(std::string(o->name) + " is not an option of torch " + release_name(release_) +
                            " (it came in " + release_name(o->since) + ")");
            i = value(*o, i + 1, c);
            if (ok_ && i + 1 < t_.size() && t_[++i] != ",")
                return fail(std::string("expected ',' after the value of ") + o->name + ", got \"" + t_[i] + "\"");
        }
        // PR #134338 (2.5) kept garbage collection and the oversize release off expandable segments; before it,
        // the mix could fail an internal assertion near the limit.
        if (ok_ && c.expandable_segments && !release_.at_least(2, 5) &&
            (split_mb_ || c.garbage_collection_threshold > 0))
            return fail("expandable_segments with max_split_size_mb or garbage_collection_threshold needs torch 2.5 "
                        "or later (PR #134338); torch " + release_name(release_) + " can fail an assertion with them");
        // Both limits are at least one large segment (20 MiB, kLargeBuffer; from 2.11 large_segment_size_mb, which
        // the oversize rounding limit also defaults to: PR #172056), whatever the order of the options.
        const std::uint64_t min_mb = c.large_segment_size / kMiB;
        for (auto [mb, name, field] : {std::tuple{split_mb_, "max_split_size_mb", &c.max_split_size},
                                       std::tuple{rounding_mb_, "max_non_split_rounding_mb", &c.max_non_split_rounding}}) {
            if (ok_ && mb && *mb < min_mb)
                fail(std::string(name) + " must be at least " + std::to_string(min_mb) + " (one large segment), got " +
                     std::to_string(*mb));
            *field = mb ? *mb * kMiB : field == &c.max_split_size ? c.max_split_size : c.large_segment_size;
        }
        return ok_;
    }

private:
    static const Option* find(const std::string& name) {
        for (const Option& o : kOptions)
            if (name == o.name) return &o;
        return nullptr;
    }
    static std::string names() {
        std::string s;
        for (const Option& o : kOptions) s += (s.empty() ? "" : ", ") + std::string(o.name);
        return s;
    }
    bool fail(const std::string& message) {
        if (ok_) errors_.push_back({"alloc_conf", message});
        ok_ = false;
        return false;
    }
    // The token after the ':' that follows an option's name.
    const std::string* after_colon(const Option& o, std::size_t& i) {
        if (i >= t_.size() || t_[i] != ":") return fail(std::string("expected ':' after ") + o.name), nullptr;
        if (++i >= t_.size() || t_[i] == ",") return fail(std::string(o.name) + " needs a value"), nullptr;
        return &t_[i];
    }
    // Digits only: torch's stoull would also take "128x" or "-5" (wrapping); those are refused here.
    bool unsigned_value(const Option& o, const std::string& s, std::uint64_t& v) {
        const bool digits = !s.empty() && s.size() <= 12 &&
                            std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch); });
        if (!digits) return fail(std::string(o.name) + " must be a whole number, got \"" + s + "\"");
        v = std::stoull(s);
        return true;
    }
    bool double_value(const Option& o, const std::string& s, double& v) {
        std::size_t used = 0;
        const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
            return std::isdigit(ch) || ch == '.';
        });
        if (plain) v = std::stod(s, &used);
        if (!plain || used != s.size()) return fail(std::string(o.name) + " must be a number, got \"" + s + "\"");
        return true;
    }
    // AllocatorConfig.h toBool: exactly "True" or "False".
    bool bool_value(const Option& o, const std::string& s, bool& v) {
        if (s != "True" && s != "False")
            return fail(std::string("expected True or False for ") + o.name + ", got \"" + s + "\"");
        v = s == "True";
        return true;
    }

    std::size_t value(const Option& o, std::size_t i, AllocConf& c) {
        const std::string* s = after_colon(o, i);
        if (!s) return i;
        std::uint64_t n = 0;
        bool b = false;
        double x = 0;
        switch (o.kind) {
            case Kind::limit_mb:
                if (unsigned_value(o, *s, n)) (o.name == std::string("max_split_size_mb") ? split_mb_ : rounding_mb_) = n;
                break;
            case Kind::segment_mb:  // must exceed kMinLargeAlloc (10 MiB)
                if (unsigned_value(o, *s, n) && n <= 10) fail("large_segment_size_mb must be more than 10, got " + *s);
                c.large_segment_size = n * kMiB;
                break;
            case Kind::fraction:
                if (!double_value(o, *s, x)) break;
                // garbage_collection_threshold: (0, 1) (AllocatorConfig.cpp); a memory fraction: (0, 1].
                if (x <= 0 || x > 1 || (x == 1 && o.name[0] == 'g'))
                    fail(std::string(o.name) + " must be in (0, 1" + (o.name[0] == 'g' ? ")" : "]") + ", got " + *s);
                else if (o.name[0] == 'g') c.garbage_collection_threshold = x;
                else c.per_process_memory_fraction = x;
                break;
            case Kind::divisions: return divisions(o, i, c);
            case Kind::boolean:
                if (bool_value(o, *s, b) && std::string(o.name) == "expandable_segments") c.expandable_segments = b;
                break;
            case Kind::backend:
                if (*s == "cudaMallocAsync")
                    fail("backend:cudaMallocAsync is CUDA's own pool allocator, which this replay does not model");
                else if (*s != "native")
                    fail("backend must be native or cudaMallocAsync, got \"" + *s + "\"");
                break;
            case Kind::threads:  // CUDAAllocatorConfig.cpp: a power of 2, at most pinned_max_register_threads() = 128
                if (unsigned_value(o, *s, n) && (!is_power_of_two(n) || n > 128))
                    fail(std::string(o.name) + " must be a power of 2 up to 128, got " + *s);
                break;
            case Kind::positive:
                if (unsigned_value(o, *s, n) && n == 0) fail(std::string(o.name) + " must be more than 0");
                break;
        }
        return i;
    }

    // AllocatorConfig.cpp parseRoundUpPower2Divisions: one power of 2 for every interval, or a list of
    // interval:divisions pairs, the interval a power of 2 in MiB (its index log2 of it, clamped to the 16 intervals)
    // or '>' for every interval above the last one given (above the first when none was); divisions 0 (off) or a
    // power of 2. The first pair also fills the intervals below it; intervals skipped between pairs stay 0.
    // (As torch 2.13 parses them: tests/validation/cuda/alloc_conf_torch-2.13.0.jsonl.)
    std::size_t divisions(const Option& o, std::size_t i, AllocConf& c) {
        auto& d = c.roundup_power2_divisions;
        std::uint64_t n = 0;
        if (t_[i] != "[") {
            if (unsigned_value(o, t_[i], n) && !is_power_of_two(n))
                fail("roundup_power2_divisions must be a power of 2, got " + t_[i]);
            else if (ok_) d.fill(static_cast<std::uint32_t>(n));
            check_one_division(d);
            return i;
        }
        bool first = true;
        std::size_t last = 0;
        while (ok_ && ++i < t_.size() && t_[i] != "]") {
            const std::string interval = t_[i];
            if (++i >= t_.size() || t_[i] != ":") {
                fail("roundup_power2_divisions: expected ':' after the interval " + interval);
                break;
            }
            std::uint64_t div = 0;
            if (++i >= t_.size() || !unsigned_value(o, t_[i], div)) break;
            if (div != 0 && !is_power_of_two(div)) {
                fail("roundup_power2_divisions: divisions must be 0 or a power of 2, got " + t_[i]);
                break;
            }
            if (interval == ">") {
                std::fill(d.begin() + static_cast<std::ptrdiff_t>(last) + 1, d.end(), static_cast<std::uint32_t>(div));
            } else {
                std::uint64_t mb = 0;
                if (!unsigned_value(o, interval, mb)) break;
                if (!is_power_of_two(mb)) {
                    fail("roundup_power2_divisions: intervals must be powers of 2 (MiB), got " + interval);
                    break;
                }
                const std::size_t index = std::min<std::size_t>(floor_log2(mb), kRoundupIntervals - 1);
                if (first) std::fill(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(index),
                                     static_cast<std::uint32_t>(div));
                first = false;
                d[index] = static_cast<std::uint32_t>(div);
                last = index;
            }
            if (i + 1 < t_.size() && t_[i + 1] != "]" && t_[++i] != ",") {
                fail("roundup_power2_divisions: expected ',' between pairs, got \"" + t_[i] + "\"");
                break;
            }
        }
        if (ok_ && i >= t_.size()) fail("roundup_power2_divisions: the list has no closing ']'");
        check_one_division(d);
        return i;
    }

    // One division rounds to the next power of two from 2.10 (PR #166399, capped at 1 GiB); before, it was ignored.
    void check_one_division(const std::array<std::uint32_t, kRoundupIntervals>& d) {
        if (ok_ && release_.at_least(2, 10) && std::find(d.begin(), d.end(), 1u) != d.end())
            fail("roundup_power2_divisions of 1 rounds to a power of two capped at 1 GiB from torch 2.10 "
                 "(PR #166399), which this replay does not model; use 0 or 2 and more");
    }

    std::vector<std::string> t_;
    TorchRelease release_;
    std::vector<FieldError>& errors_;
    bool ok_ = true;
    std::optional<std::uint64_t> split_mb_, rounding_mb_;
};

}  // namespace

std::optional<TorchRelease> parse_torch_release(const std::string& text) {
    int major = 0, minor = 0;
    std::size_t i = 0;
    auto number = [&](int& v) {
        const std::size_t start = i;
        while (i < text.size() && i - start < 3 && std::isdigit(static_cast<unsigned char>(text[i])))
            v = v * 10 + (text[i++] - '0');
        return i > start;
    };
    if (!number(major) || i >= text.size() || text[i++] != '.' || !number(minor)) return std::nullopt;
    if (i < text.size()) {  // a patch level
        int patch = 0;
        if (text[i++] != '.' || !number(patch) || i != text.size()) return std::nullopt;
    }
    const TorchRelease r{major, minor};
    if (!r.at_least(kOldestAllocatorRelease.major, kOldestAllocatorRelease.minor) ||
        r.at_least(kNewestAllocatorRelease.major, kNewestAllocatorRelease.minor + 1))
        return std::nullopt;
    return r;
}

std::optional<AllocConf> parse_alloc_conf(const std::string& text, TorchRelease release,
                                          std::vector<FieldError>& errors) {
    AllocConf c;
    if (!Parser(text, release, errors).run(c)) return std::nullopt;
    return c;
}

}  // namespace vramcalc
