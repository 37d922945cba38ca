#include "apps/commands.h"
#include "core/error.h"
namespace locr::app {
int cmd_chat(int, char**) { fail(ErrorKind::kUnsupported, "not yet"); }
}  // namespace locr::app
