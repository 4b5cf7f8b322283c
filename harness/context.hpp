#pragma once
// Hardware and software context written into every JSON report (benchmark::AddCustomContext), so a
// report can be read on its own, months later, on another machine. Keys are listed in
// docs/names-and-counters.md.

#include <optional>
#include <string>

namespace gpubench {

// `sweep_name` is "default" or "full".
void add_custom_context(const std::string& sweep_name);

// The memory roofs beside the compute roofs above: the CPU's triad bandwidth on one thread, on
// every allowed core and in L2 (harness/cpu_bandwidth.hpp), and with a GPU its measured and
// theoretical device bandwidth (harness/gpu_bandwidth.hpp), each with a `_source` key; a value key
// only where a value was found. Costs up to about 2 s, so a listing does not call it;
// GPUBENCH_CEILINGS=off skips the measurements (the `_source` keys say so).
void add_ceiling_context();

// "GPUBENCH_CEILINGS='<value>' is neither 'on' nor 'off'" for any other non-empty value.
std::optional<std::string> ceilings_setting_error();

}  // namespace gpubench
