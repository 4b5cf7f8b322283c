#pragma once
// Runs the `bench` binary as a user would (a separate process), captures its exit code, stderr and
// JSON output, for the tests of the command-line and JSON contract.

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gpubench::testing {

struct BenchRun {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
  nlohmann::json json;  // null when no JSON file was written
};

inline std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// `environment` is prepended to the command ("CUDA_VISIBLE_DEVICES= " hides every GPU).
inline BenchRun run_bench(const std::string& arguments, const std::string& environment = "",
                          bool write_json = true) {
  static int counter = 0;
  const std::string stem =
      "/tmp/gpubench_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  const std::string json_path = stem + ".json";
  std::string command = environment + " \"" GPUBENCH_BENCH_BINARY "\" " + arguments;
  if (write_json) command += " --benchmark_out=" + json_path + " --benchmark_out_format=json";
  command += " >" + stem + ".out 2>" + stem + ".err";
  std::remove(json_path.c_str());
  const int status = std::system(command.c_str());
  BenchRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.stdout_text = read_file(stem + ".out");
  run.stderr_text = read_file(stem + ".err");
  const std::string text = write_json ? read_file(json_path) : "";
  if (!text.empty()) run.json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::remove((stem + ".out").c_str());
  std::remove((stem + ".err").c_str());
  std::remove(json_path.c_str());
  return run;
}

}  // namespace gpubench::testing
