// Small readers for the languages the exports are written in, each reading what its consumer would: a YAML
// mapping (PyYAML's safe_load, as accelerate loads its config), a shell command line (POSIX words, as bash splits
// them), and a Python file's statements with their expressions (as CPython parses them). Only what the exports use:
// what a reader cannot read it names in `error` (and returns null) rather than guessing; none throws.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vramcalc {

// A block mapping nested by indentation, with YAML 1.1 plain scalars (PyYAML: yes/no/on/off are booleans).
nlohmann::json read_yaml(const std::string& text, std::string& error);
// A YAML 1.1 plain or quoted scalar, or a flow sequence [a, b] (OmegaConf's command-line overrides).
nlohmann::json yaml_scalar(const std::string& text);

// The words of every command in the text: comments dropped, backslash-newlines joined, quotes removed.
std::vector<std::vector<std::string>> shell_commands(const std::string& text);

// Python, as a tree of JSON nodes. Expressions: numbers, strings, True/False/None as JSON values; {"name": "a.b"};
// {"call": <expr>, "args": [...], "kwargs": {...}}; {"list"|"tuple": [...]}; {"dict": [[k, v], ...]};
// {"set": [...]}; {"op": "+", "l": ..., "r": ...}; {"attr": name, "of": <expr>}; {"index": <expr>, "of": <expr>}.
// Statements: {"assign": [targets...], "value": <expr>}, {"expr": <expr>}, {"import": "text"},
// {"for": <target>, "in": <expr>, "body": [...]}, {"if": <expr>, "body": [...]}, {"with": [<expr>...], "body": [...]}.
nlohmann::json read_python(const std::string& text, std::string& error);
// Every call in a statement list (bodies included) whose callee's dotted name is `name`.
std::vector<nlohmann::json> python_calls(const nlohmann::json& statements, const std::string& name);
// The dotted name of {"name"} / {"attr"} chains, "" for anything else.
std::string dotted_name(const nlohmann::json& expr);

}  // namespace vramcalc
