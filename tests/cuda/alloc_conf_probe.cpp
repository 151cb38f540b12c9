// What torch's own allocator-config parser makes of each string given on the command line, as JSON lines: the
// accepted values, or the error. Built against an installed torch's headers and libc10 (alloc_conf_truth.sh); it
// runs on the CPU, since the options that shape device memory are parsed in c10 (c10/core/AllocatorConfig.cpp).
#include <c10/core/AllocatorConfig.h>

#include <cstdio>
#include <string>

using c10::CachingAllocator::AcceleratorAllocatorConfig;

static std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (ch == '\n') { out += "\\n"; continue; }
        out += ch;
    }
    return out + "\"";
}

int main(int argc, char** argv) {
    for (int a = 1; a < argc; ++a) {
        const std::string conf = argv[a];
        std::string result;
        try {
            c10::CachingAllocator::setAllocatorSettings(conf);
            std::string div = "[";
            for (size_t d : AcceleratorAllocatorConfig::roundup_power2_divisions())
                div += (div.size() > 1 ? "," : "") + std::to_string(d);
            result = "\"ok\":true,\"max_split_size\":" + std::to_string(AcceleratorAllocatorConfig::max_split_size()) +
                     ",\"max_non_split_rounding\":" +
                     std::to_string(AcceleratorAllocatorConfig::max_non_split_rounding_size()) +
                     ",\"large_segment_size\":" + std::to_string(AcceleratorAllocatorConfig::large_segment_size()) +
                     ",\"garbage_collection_threshold\":" +
                     std::to_string(AcceleratorAllocatorConfig::garbage_collection_threshold()) +
                     ",\"expandable_segments\":" +
                     (AcceleratorAllocatorConfig::use_expandable_segments() ? "true" : "false") +
                     ",\"roundup_power2_divisions\":" + div + "]";
        } catch (const std::exception& e) {
            std::string what = e.what();
            result = "\"ok\":false,\"error\":" + quoted(what.substr(0, what.find('\n')));
        }
        std::printf("{\"conf\":%s,%s}\n", quoted(conf).c_str(), result.c_str());
    }
    return 0;
}
