// The names of the taps LightOnOCR-2's forward pass records (the vision encoder, projector and text
// decoder sites model/taps.h lists), what `locr dump --taps` selects among.
#pragma once

#include <string>
#include <vector>

#include "model/lightonocr/config.h"

namespace locr::model {

// Every tap name of a LightOnOCR-2 model, in forward order (vision ones only when `vision`).
std::vector<std::string> tap_names(const ModelConfig& cfg, bool vision);

}  // namespace locr::model
