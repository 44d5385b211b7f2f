// gpusched — the command-line tool. Subcommands live in src/cli/cmd_*.cpp.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <vector>

#include "cli/command.hpp"
#include "io/text_input.hpp"

namespace gpusched::cli {
namespace {

std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> setups;
  return setups;
}
int g_exit_status = 0;

}  // namespace

bool register_command(CommandSetup setup) {
  registry().push_back(setup);
  return true;
}

void set_exit_status(int status) { g_exit_status = status; }

void throw_input_error(std::string_view file, std::string_view message) {
  const bool named = message.size() > file.size() && message.substr(0, file.size()) == file &&
                     message[file.size()] == ':';
  throw InputError(named ? std::string(message) : std::string(file) + ": " + std::string(message));
}

std::string read_file(const std::string& path) {
  auto text = io::detail::read_input_file(path);
  if (!text) throw InputError(text.error().message);
  return std::move(*text);
}

std::vector<std::string> read_files(const std::vector<std::string>& paths) {
  std::vector<std::string> texts;
  for (const std::string& p : paths) texts.push_back(read_file(p));
  return texts;
}

std::string data_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("GPUSCHED_DATA_DIR")) return env;
  if (fs::exists(GPUSCHED_DATA_DIR)) return GPUSCHED_DATA_DIR;
  return GPUSCHED_INSTALLED_DATA_DIR;
}

}  // namespace gpusched::cli

int main(int argc, char** argv) {
  using namespace gpusched::cli;
  CLI::App app{"gpusched: GPU-cluster scheduling policies as a tool (placement, MIG, topology, fair share, "
               "policy benchmarks)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpusched 0.1.0");
  // Setup functions may register in any static-initialisation order; present them sorted by name.
  for (CommandSetup setup : registry()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const InputError& e) {
    std::fprintf(stderr, "gpusched: error: %s\n", gpusched::io::detail::tidy_message(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpusched: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    // Readers return errors as values; reaching here is a defect of ours, still reported, not an abort.
    std::fprintf(stderr, "gpusched: internal error: %s\n", gpusched::io::detail::tidy_message(e.what()).c_str());
    return 3;
  }
  return g_exit_status;
}
