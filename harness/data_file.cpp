#include "harness/data_file.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace gpubench {

namespace {

// What the error says a path of this type is, for every type that is not a regular file.
const char* what_it_is(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a directory, not a file";
    case std::filesystem::file_type::fifo:
      return "a FIFO (named pipe), not a regular file";
    case std::filesystem::file_type::socket:
      return "a socket, not a regular file";
    case std::filesystem::file_type::character:
      return "a character device, not a regular file";
    case std::filesystem::file_type::block:
      return "a block device, not a regular file";
    default:
      return "not a regular file";
  }
}

}  // namespace

void require_regular_file(const std::string& path, const std::string& what,
                          const std::string& hint) {
  std::error_code error;
  // status() follows symbolic links: a link to a regular file is a regular file.
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  const std::filesystem::file_type type = status.type();
  if (type == std::filesystem::file_type::not_found ||
      type == std::filesystem::file_type::regular || type == std::filesystem::file_type::none) {
    return;  // missing or unreadable: the caller's open reports it with the reason
  }
  throw std::runtime_error(what + " '" + path + "' is " + what_it_is(type) + hint);
}

}  // namespace gpubench
