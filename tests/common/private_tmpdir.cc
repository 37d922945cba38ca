// Linked into every GoogleTest runner: the process's temporary files go to a folder of its own,
// removed with everything in it when the runner exits. Tests write models, GGUF files, PDFs and
// dumps under std::filesystem::temp_directory_path() (TMPDIR, which the locr processes they start
// inherit too); a test that fails half-way, or forgets to clean up, must not leave them in the
// machine's /tmp run after run.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

struct PrivateTmpdir {
  std::string dir;
  pid_t owner = 0;
  PrivateTmpdir() {
    std::error_code ec;
    std::string tmpl = (std::filesystem::temp_directory_path(ec) / "locr-tests-XXXXXX").string();
    if (ec || mkdtemp(tmpl.data()) == nullptr) return;  // keep the plain temp folder
    dir = tmpl;
    owner = getpid();
    setenv("TMPDIR", dir.c_str(), 1);
  }
  ~PrivateTmpdir() {
    // A forked death-test child that exits normally runs this too: only the creator removes.
    if (dir.empty() || getpid() != owner) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const PrivateTmpdir g_private_tmpdir;

}  // namespace
