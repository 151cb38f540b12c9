#include "exports.hpp"
