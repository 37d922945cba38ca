// Sub-command entry points. Each takes argv starting at the command name.
#pragma once

namespace locr::app {

int cmd_generate(int argc, char** argv);
int cmd_dump(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_pull(int argc, char** argv);
int cmd_perf(int argc, char** argv);
int cmd_ocr(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_parity(int argc, char** argv);
int cmd_draft_sim(int argc, char** argv);

}  // namespace locr::app
