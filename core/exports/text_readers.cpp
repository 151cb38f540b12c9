#include "exports/text_readers.hpp"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace vramcalc {

using nlohmann::json;

namespace {

std::string strip(const std::string& s) {
    const std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool all_of(const std::string& s, std::size_t from, int (*pred)(int)) {
    if (from >= s.size()) return false;
    for (std::size_t i = from; i < s.size(); ++i)
        if (!pred(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

}  // namespace

// PyYAML 6 resolver.py (YAML 1.1 implicit types): bool, int, float (a dot required), null, else a string.
json yaml_scalar(const std::string& raw) {
    const std::string s = strip(raw);
    if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') {
        std::string out;
        for (std::size_t i = 1; i + 1 < s.size(); ++i) out += s[i], i += s[i] == '\'' && s[i + 1] == '\'';
        return out;
    }
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
        const json j = json::parse(s, nullptr, false);
        return j.is_string() ? j : json(s.substr(1, s.size() - 2));
    }
    if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
        json list = json::array();
        std::stringstream items(s.substr(1, s.size() - 2));
        for (std::string item; std::getline(items, item, ',');)
            if (!strip(item).empty()) list.push_back(yaml_scalar(item));
        return list;
    }
    for (const char* t : {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
        if (s == t) return true;
    for (const char* f : {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
        if (s == f) return false;
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
    const std::size_t sign = s[0] == '-' || s[0] == '+';
    if (all_of(s, sign, isdigit)) return s[0] == '-' ? json(std::strtoll(s.c_str(), nullptr, 10)) : json(std::strtoull(s.c_str() + sign, nullptr, 10));
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.find('.') != std::string::npos && end == s.c_str() + s.size()) return d;
    return s;
}

json read_yaml(const std::string& text, std::string& error) {
    json root = json::object();
    std::vector<std::pair<std::size_t, json*>> open{{0, &root}};  // (indent, mapping) of the blocks being filled
    std::string pending;                                           // a key whose mapping starts on the next line
    std::istringstream in(text);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        const std::string body = strip(line);
        if (body.empty() || body[0] == '#') continue;
        const std::size_t indent = line.find_first_not_of(' ');
        auto fail = [&](const std::string& what) {
            error = "YAML line " + std::to_string(number) + ": " + what;
            return json();
        };
        if (!pending.empty()) {
            if (indent <= open.back().first) return fail("the mapping of \"" + pending + "\" is empty");
            json& child = (*open.back().second)[pending] = json::object();
            open.push_back({indent, &child});
            pending.clear();
        }
        while (open.size() > 1 && indent < open.back().first) open.pop_back();
        if (indent != open.back().first) return fail("unexpected indentation");
        if (body[0] == '-' || body[0] == '{' || body[0] == '[') return fail("only block mappings are read");
        const std::size_t colon = body.find(": ");
        const bool opens = colon == std::string::npos && body.back() == ':';
        if (colon == std::string::npos && !opens) return fail("not a key: value pair");
        const std::string key = opens ? body.substr(0, body.size() - 1) : body.substr(0, colon);
        std::string value = opens ? "" : body.substr(colon + 2);
        if (const std::size_t hash = value.find(" #"); hash != std::string::npos && value[0] != '"' && value[0] != '\'')
            value = value.substr(0, hash);
        if (open.back().second->contains(key)) return fail("duplicate key \"" + key + "\"");
        if (opens) pending = key;
        else (*open.back().second)[key] = yaml_scalar(value);
    }
    if (!pending.empty()) (*open.back().second)[pending] = nullptr;
    return root;
}

std::vector<std::vector<std::string>> shell_commands(const std::string& text) {
    std::vector<std::vector<std::string>> commands;
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    char quote = 0;
    auto end_word = [&] {
        if (in_word) words.push_back(word);
        word.clear(), in_word = false;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (quote) {
            if (ch == quote) quote = 0;
            else if (quote == '"' && ch == '\\' && i + 1 < text.size() && std::string("\"\\$`").find(text[i + 1]) != std::string::npos) word += text[++i];
            else word += ch;
        } else if (ch == '\'' || ch == '"') {
            quote = ch, in_word = true;
        } else if (ch == '\\' && i + 1 < text.size()) {
            if (text[++i] != '\n') word += text[i], in_word = true;  // a backslash-newline joins lines
        } else if (ch == '#' && !in_word) {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if (ch == '\n' || ch == ';') {
            end_word();
            if (!words.empty()) commands.push_back(words);
            words.clear();
        } else if (ch == ' ' || ch == '\t') {
            end_word();
        } else {
            word += ch, in_word = true;
        }
    }
    end_word();
    if (!words.empty()) commands.push_back(words);
    return commands;
}

// ---------------------------------------------------------------- Python

namespace {

struct Token {
    enum Kind { name, number, string, op } kind;
    std::string text;
};

// Logical lines (brackets continue a line, comments dropped) with their indentation.
struct Line {
    std::size_t indent;
    std::vector<Token> tokens;
    int number;
};

bool tokenize(const std::string& text, std::vector<Line>& lines, std::string& error) {
    int depth = 0, number = 1;
    Line line{0, {}, 1};
    bool at_start = true;
    std::size_t indent = 0;
    for (std::size_t i = 0; i < text.size();) {
        const char ch = text[i];
        if (at_start) {
            if (ch == ' ') { ++indent, ++i; continue; }
            at_start = false, line.indent = indent, line.number = number;
        }
        if (ch == '\n') {
            ++number, ++i;
            if (depth == 0) {
                if (!line.tokens.empty()) lines.push_back(line);
                line.tokens.clear(), at_start = true, indent = 0;
            }
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\r') { ++i; continue; }
        if (ch == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (ch == '\\' && i + 1 < text.size() && text[i + 1] == '\n') { i += 2, ++number; continue; }
        if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
            std::size_t j = i;
            while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
            const bool prefixed = j < text.size() && (text[j] == '"' || text[j] == '\'') && j - i <= 2;
            if (prefixed) {  // f"", b"", r"" prefixes: not read
                error = "Python line " + std::to_string(number) + ": string prefixes are not read";
                return false;
            }
            line.tokens.push_back({Token::name, text.substr(i, j - i)});
            i = j;
            continue;
        }
        if (std::isdigit(static_cast<unsigned char>(ch)) || (ch == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
            std::size_t j = i;
            while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == '_' ||
                                       ((text[j] == '-' || text[j] == '+') && (text[j - 1] == 'e' || text[j - 1] == 'E'))))
                ++j;
            line.tokens.push_back({Token::number, text.substr(i, j - i)});
            i = j;
            continue;
        }
        if (ch == '"' || ch == '\'') {
            if (text.compare(i, 3, std::string(3, ch)) == 0) {
                error = "Python line " + std::to_string(number) + ": triple-quoted strings are not read";
                return false;
            }
            std::string value;
            std::size_t j = i + 1;
            for (; j < text.size() && text[j] != ch && text[j] != '\n'; ++j) {
                if (text[j] == '\\' && j + 1 < text.size()) {
                    const char e = text[++j];
                    value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
                } else value += text[j];
            }
            if (j >= text.size() || text[j] != ch) {
                error = "Python line " + std::to_string(number) + ": unterminated string";
                return false;
            }
            line.tokens.push_back({Token::string, value});
            i = j + 1;
            continue;
        }
        static const char* const kTwo[] = {"==", "!=", "<=", ">=", "**", "//", "->", "+=", "-="};
        std::string op(1, ch);
        for (const char* two : kTwo)
            if (text.compare(i, 2, two) == 0) op = two;
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") --depth;
        if (depth < 0) {
            error = "Python line " + std::to_string(number) + ": unbalanced brackets";
            return false;
        }
        line.tokens.push_back({Token::op, op});
        i += op.size();
    }
    if (!line.tokens.empty()) lines.push_back(line);
    if (depth != 0) error = "Python: unbalanced brackets at the end";
    return depth == 0;
}

// A recursive-descent parser of one logical line's expression (CPython's grammar, the subset the exports write).
class Parser {
public:
    Parser(const std::vector<Token>& t, std::string& error) : t_(t), error_(error) {}
    bool done() const { return i_ >= t_.size(); }
    bool ok() const { return error_.empty(); }
    bool peek(const std::string& op) const { return i_ < t_.size() && t_[i_].kind != Token::string && t_[i_].text == op; }
    bool eat(const std::string& op) {
        if (!peek(op)) return false;
        ++i_;
        return true;
    }
    void expect(const std::string& op) {
        if (!eat(op)) fail("expected \"" + op + "\"");
    }
    json fail(const std::string& what) {
        if (error_.empty()) error_ = what + (i_ < t_.size() ? " at \"" + t_[i_].text + "\"" : " at the end of the line");
        i_ = t_.size();
        return nullptr;
    }
    // Comma-separated expressions: one, or a tuple.
    json expressions() {
        json first = expression();
        if (!peek(",")) return first;
        json items = json::array({first});
        while (eat(",") && !done() && !peek("=") && !peek(":") && !peek(")")) items.push_back(expression());
        return {{"tuple", items}};
    }
    json expression() { return binary(0); }

private:
    json binary(int level) {
        static const std::vector<std::vector<std::string>> kLevels = {
            {"or"}, {"and"}, {"==", "!=", "<", ">", "<=", ">=", "in"}, {"+", "-"}, {"*", "/", "//", "%", "@"}, {"**"}};
        if (level == int(kLevels.size())) return unary();
        if (level == 1 && eat("not")) return {{"op", "not"}, {"l", binary(level)}};
        json left = binary(level + 1);
        for (bool more = true; more && ok();) {
            more = false;
            for (const std::string& op : kLevels[level])
                if (peek(op)) {
                    ++i_;
                    left = {{"op", op}, {"l", left}, {"r", binary(level + 1)}};
                    more = true;
                    break;
                }
        }
        return left;
    }
    json unary() {
        if (eat("-")) {
            const json v = unary();
            if (v.is_number_float()) return -v.get<double>();
            if (v.is_number_unsigned()) return -static_cast<std::int64_t>(v.get<std::uint64_t>());
            return {{"op", "neg"}, {"l", v}};
        }
        return postfix(atom());
    }
    json postfix(json e) {
        while (ok() && !done()) {
            if (eat(".")) {
                if (done() || t_[i_].kind != Token::name) return fail("expected a name after \".\"");
                e = {{"attr", t_[i_++].text}, {"of", e}};
            } else if (eat("(")) {
                json call = {{"call", e}, {"args", json::array()}, {"kwargs", json::object()}};
                while (ok() && !eat(")")) {
                    if (i_ + 1 < t_.size() && t_[i_].kind == Token::name && t_[i_ + 1].text == "=" && t_[i_ + 1].kind == Token::op) {
                        const std::string key = t_[i_].text;
                        i_ += 2;
                        if (call["kwargs"].contains(key)) return fail("keyword argument \"" + key + "\" repeated");
                        call["kwargs"][key] = expression();
                    } else {
                        if (!call["kwargs"].empty()) return fail("positional argument after a keyword argument");
                        call["args"].push_back(expression());
                    }
                    if (!peek(")")) expect(",");
                }
                e = call;
            } else if (eat("[")) {
                json index = expressions();
                expect("]");
                e = {{"index", index}, {"of", e}};
            } else break;
        }
        return e;
    }
    json atom() {
        if (done()) return fail("expected an expression");
        const Token& tok = t_[i_++];
        switch (tok.kind) {
            case Token::number: {
                const bool integer = tok.text.find_first_of(".eE") == std::string::npos || tok.text.rfind("0x", 0) == 0;
                char* end = nullptr;
                if (integer) {
                    const unsigned long long v = std::strtoull(tok.text.c_str(), &end, 0);
                    if (*end) return fail("unreadable number " + tok.text);
                    return json(std::uint64_t(v));
                }
                const double v = std::strtod(tok.text.c_str(), &end);
                if (*end) return fail("unreadable number " + tok.text);
                return v;
            }
            case Token::string: {
                std::string s = tok.text;
                while (!done() && t_[i_].kind == Token::string) s += t_[i_++].text;  // adjacent literals concatenate
                return s;
            }
            case Token::name:
                if (tok.text == "True") return true;
                if (tok.text == "False") return false;
                if (tok.text == "None") return nullptr;
                return {{"name", tok.text}};
            case Token::op:
                if (tok.text == "(") {
                    if (eat(")")) return {{"tuple", json::array()}};
                    json inner = expressions();
                    if (peek(",")) inner = {{"tuple", json::array({inner})}}, ++i_;
                    expect(")");
                    return inner;
                }
                if (tok.text == "[") {
                    json items = json::array();
                    while (ok() && !eat("]")) {
                        items.push_back(expression());
                        if (!peek("]")) expect(",");
                    }
                    return {{"list", items}};
                }
                if (tok.text == "{") {  // a dict, or a set when the first item has no ":"
                    json items = json::array();
                    bool set = false;
                    while (ok() && !eat("}")) {
                        json key = expression();
                        if (items.empty() && !peek(":")) set = true;
                        if (set) items.push_back(key);
                        else expect(":"), items.push_back(json::array({key, expression()}));
                        if (!peek("}")) expect(",");
                    }
                    return {{set ? "set" : "dict", items}};
                }
                --i_;
                return fail("unexpected");
        }
        return fail("unexpected");
    }

    const std::vector<Token>& t_;
    std::string& error_;
    std::size_t i_ = 0;
};

// The statements of lines[at..] indented exactly `indent`, and (recursively) their bodies.
json statements(const std::vector<Line>& lines, std::size_t& at, std::size_t indent, std::string& error) {
    json out = json::array();
    while (at < lines.size() && error.empty()) {
        const Line& line = lines[at];
        if (line.indent < indent) break;
        if (line.indent > indent) {
            error = "Python line " + std::to_string(line.number) + ": unexpected indentation";
            break;
        }
        ++at;
        const std::string first = line.tokens[0].kind == Token::name ? line.tokens[0].text : "";
        if (first == "import" || first == "from") {
            std::string text;
            for (const Token& t : line.tokens) text += (text.empty() ? "" : " ") + t.text;
            out.push_back({{"import", text}});
            continue;
        }
        Parser p(line.tokens, error);
        json s;
        const bool block = first == "for" || first == "if" || first == "with" || first == "while" || first == "def" || first == "class";
        if (first == "for") {
            p.eat("for");
            s["for"] = p.expressions();  // the target list, read as expressions
            if (!s["for"].contains("op") || s["for"]["op"] != "in") {
                // `a, b in c` parses as a tuple whose last item is a comparison: take it apart.
                json target = s["for"];
                if (target.contains("tuple") && target["tuple"].back().is_object() && target["tuple"].back().value("op", "") == "in") {
                    json in = target["tuple"].back();
                    target["tuple"].back() = in["l"];
                    s["for"] = target, s["in"] = in["r"];
                } else p.fail("expected \"for target in iterable\"");
            } else {
                s["in"] = s["for"]["r"], s["for"] = s["for"]["l"];
            }
        } else if (first == "if") {
            p.eat("if");
            s["if"] = p.expression();
        } else if (first == "with") {
            p.eat("with");
            s["with"] = json::array();
            do {
                s["with"].push_back(p.expression());
                if (p.eat("as")) p.expression();
            } while (p.eat(","));
        } else if (block) {
            p.fail("\"" + first + "\" blocks are not read");
        } else {
            json value = p.expressions();
            json targets = json::array();
            while (p.ok() && p.eat("=")) targets.push_back(value), value = p.expressions();
            s = targets.empty() ? json{{"expr", value}} : json{{"assign", targets}, {"value", value}};
        }
        if (block) {
            p.expect(":");
            if (!p.done()) p.fail("a statement after \":\" on the same line is not read");
            s["body"] = at < lines.size() && lines[at].indent > indent ? statements(lines, at, lines[at].indent, error) : json::array();
            if (s["body"].empty() && error.empty()) error = "Python line " + std::to_string(line.number) + ": an empty block";
        } else if (!p.done()) {
            p.fail("unexpected");
        }
        if (!error.empty() && error.rfind("Python", 0) != 0) error = "Python line " + std::to_string(line.number) + ": " + error;
        out.push_back(s);
    }
    return out;
}

void collect_calls(const json& node, const std::string& name, std::vector<json>& out) {
    if (node.is_object()) {
        if (node.contains("call") && dotted_name(node["call"]) == name) out.push_back(node);
        for (const auto& item : node.items()) collect_calls(item.value(), name, out);
    } else if (node.is_array()) {
        for (const json& item : node) collect_calls(item, name, out);
    }
}

}  // namespace

json read_python(const std::string& text, std::string& error) {
    std::vector<Line> lines;
    if (!tokenize(text, lines, error)) return nullptr;
    std::size_t at = 0;
    json out = statements(lines, at, lines.empty() ? 0 : lines[0].indent, error);
    if (error.empty() && at != lines.size()) error = "Python line " + std::to_string(lines[at].number) + ": unexpected indentation";
    return error.empty() ? out : json();
}

std::vector<json> python_calls(const json& statements, const std::string& name) {
    std::vector<json> out;
    collect_calls(statements, name, out);
    return out;
}

std::string dotted_name(const json& e) {
    if (!e.is_object()) return "";
    if (e.contains("name")) return e["name"].get<std::string>();
    if (e.contains("attr") && e.contains("of")) {
        const std::string of = dotted_name(e["of"]);
        return of.empty() ? "" : of + "." + e["attr"].get<std::string>();
    }
    return "";
}

}  // namespace vramcalc
