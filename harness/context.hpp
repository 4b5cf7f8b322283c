#pragma once
// Hardware and software context written into every JSON report (benchmark::AddCustomContext), so a
// report can be read on its own, months later, on another machine. Keys are listed in
// docs/names-and-counters.md.

#include <string>

namespace gpubench {

// `sweep_name` is "default" or "full".
void add_custom_context(const std::string& sweep_name);

}  // namespace gpubench
