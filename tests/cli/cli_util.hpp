// Running the gpusched tool from the CLI tests: exit status and output of one command line.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

namespace gpusched::cli_test {

// A file's whole content (bytes as written).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Run {
  int status = -1;
  std::string out;
};

// Runs `gpusched ARGS` through the shell; stdout is captured, stderr merged into it when asked
// (otherwise discarded, so tests can check that bad input prints nothing on stdout).
inline Run run_tool(const std::string& args, bool merge_stderr = false) {
  const std::string cmd = std::string(GPUSCHED_TOOL) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// Writes `text` to a file in this process's scratch folder and returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpusched-cli-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace gpusched::cli_test
