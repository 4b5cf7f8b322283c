// main() of a program built against the installed package (gpubench::main): the runner over the
// workloads the program declared with GPUBENCH_WORKLOAD (include/gpubench/workload.hpp).

#include "gpubench/workload.hpp"

int main(int argc, char** argv) { return gpubench::run(argc, argv); }
