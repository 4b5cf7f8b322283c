#pragma once
// The one check every data-file reader makes before opening a path: that it names a regular file.
// A directory opens as a stream on Linux and then reads as empty or as an enormous size (its
// seekg(end) is LLONG_MAX), and opening a FIFO blocks until something writes to it, so neither
// may reach the reader's own checks.

#include <string>

namespace gpubench {

// Throws std::runtime_error "<what> '<path>' is a directory, not a file" (or "is a FIFO", "is a
// character device", ..., "is not a regular file"), then `hint`, when `path` exists and is not a
// regular file or a link to one. A path that does not exist passes: opening it says so, with
// errno's reason.
void require_regular_file(const std::string& path, const std::string& what,
                          const std::string& hint = "");

}  // namespace gpubench
