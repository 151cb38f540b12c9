// The core's text as a JavaScript string, decoded by the browser's TextDecoder straight from the module's memory
// (Embind's std::string first looks for a NUL byte by byte in JavaScript: about 9 ms of a cold page's first estimate).
#pragma once
#include <emscripten/val.h>

#include <string>

inline emscripten::val js_text(const std::string& s) {
    static const emscripten::val decoder = emscripten::val::global("TextDecoder").new_(std::string("utf-8"));
    const auto* bytes = reinterpret_cast<const unsigned char*>(s.data());
    return decoder.call<emscripten::val>("decode", emscripten::val(emscripten::typed_memory_view(s.size(), bytes)));
}
