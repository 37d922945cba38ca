// Which LightOnOCR checkpoint a model directory holds, and so what its output can carry. The
// generations share one architecture (LightOnOCR-1B-1025, LightOnOCR-2-1B and its -bbox variants,
// LightOnOCR-3-1B); only the name tells them apart, as LightOn's own client does (lightonai/LightOnOCR,
// lightonocr/models.py): plain OCR in all; figure boxes `![image](image_N.png)x1,y1,x2,y2` in the
// LightOnOCR-2 -bbox variants; the grounding mode (every layout block boxed) in LightOnOCR-3 only.
// The name is looked for in the directory's path (a Hugging Face cache path
// `models--lightonai--LightOnOCR-3-1B/snapshots/<rev>` or a plain `.../LightOnOCR-2-1B-bbox`), then in
// config.json's `_name_or_path`. A name that says nothing (a fine-tune in `/models/ocr`) is
// `unknown`: every mode is then allowed, as the model may have been trained for it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace locr::model {

struct ModelVariant {
  int generation = 0;         // 1, 2, 3; 0: unknown
  bool figure_boxes = false;  // emits figure boxes (LightOnOCR-2 -bbox; LightOnOCR-3 in grounding mode)
  bool grounding = false;     // has the grounding mode (LightOnOCR-3)
  std::string name;           // the checkpoint name it was told from ("" when unknown)

  bool known() const { return generation != 0; }
  // "LightOnOCR-2-1B-bbox (LightOnOCR-2 with figure boxes)", or "an unknown LightOnOCR checkpoint".
  std::string describe() const;
};

// From a checkpoint name such as "lightonai/LightOnOCR-2-1B-bbox-soup" (case-insensitive).
ModelVariant variant_from_name(const std::string& name);

// From the model directory's path and its config.json (`config` may be null).
ModelVariant detect_variant(const std::string& dir, const nlohmann::json* config);

}  // namespace locr::model
