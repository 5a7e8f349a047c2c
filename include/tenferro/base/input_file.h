// Opening input files: only a regular file is read, so that a directory,
// FIFO, socket or device (a symbolic link to /dev/zero) is refused before
// anything is read instead of blocking or filling memory. The .npy reader
// and the einsum instance loader share it (the CLI audit of 2026-12-06).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "tenferro/base/status.h"

namespace tenferro {

/// A regular file open for reading, and its size when it was opened.
struct InputFile {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
  std::uint64_t size = 0;
};

/// The error of a failed file operation, its code from `err` (an errno
/// value): kNotFound for ENOENT / ENOTDIR, kPermissionDenied for EACCES /
/// EPERM / EROFS, kResourceExhausted for ENOSPC / EDQUOT, else
/// kUnavailable. The message is "PATH: cannot ACTION: <strerror>".
Error file_error(const std::string& path, std::string_view action, int err);

/// Opens `path` (symbolic links followed) for reading. Errors, each message
/// starting with `path`: file_error's when it cannot be opened;
/// kInvalidArgument when it is not a regular file ("expected a regular
/// KIND, found a FIFO"; a FIFO is checked without waiting for a writer);
/// kResourceExhausted when it holds more than `max_bytes` bytes.
Result<InputFile> open_input_file(const std::string& path, std::string_view kind,
                                  std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

/// The whole content of the file open_input_file(path, kind, max_bytes)
/// opens; its errors, and file_error's when reading fails.
Result<std::string> read_input_file(const std::string& path, std::string_view kind, std::uint64_t max_bytes);

}  // namespace tenferro
