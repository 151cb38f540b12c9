// The configuration a JSON value parses to; the test fails with the parser's first error otherwise.
#pragma once
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "setup/config_json.hpp"

inline vramcalc::Config parsed(const nlohmann::json& j) {
    const vramcalc::ParsedConfig p = vramcalc::parse_config(j);
    INFO(j.dump());
    INFO((p.ok() ? std::string() : p.errors[0].field + ": " + p.errors[0].message));
    REQUIRE(p.ok());
    return p.config;
}
