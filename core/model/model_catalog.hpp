// The bundled catalog of popular models by Hugging Face id: each one's config.json, stripped of keys that
// never change shapes or memory, read by the same reader as a pasted config (hf_config.hpp).
#pragma once
#include <string>
#include <vector>

namespace vramcalc {

struct CatalogModel {
    const char* id;      // "Qwen/Qwen3-8B"
    const char* config;  // the compact config.json
};

const std::vector<CatalogModel>& model_catalog();
// By id, case-insensitively; also accepts a hub URL (https://huggingface.co/<id>[/...]).
const CatalogModel* find_catalog_model(const std::string& id_or_url);

}  // namespace vramcalc
