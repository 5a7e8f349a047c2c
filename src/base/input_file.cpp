// Opening input files (input_file.h).
#include "tenferro/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tenferro {
namespace {

std::string_view file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

}  // namespace

Error file_error(const std::string& path, std::string_view action, int err) {
  const ErrorCode code = err == ENOENT || err == ENOTDIR                 ? ErrorCode::kNotFound
                         : err == EACCES || err == EPERM || err == EROFS ? ErrorCode::kPermissionDenied
                         : err == ENOSPC || err == EDQUOT                ? ErrorCode::kResourceExhausted
                                                                         : ErrorCode::kUnavailable;
  return make_error(code, ErrorStage::kNone, "{}: cannot {}: {}", path, action, std::strerror(err));
}

Result<InputFile> open_input_file(const std::string& path, std::string_view kind, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
  // below); for a regular file the flag changes nothing and is cleared.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return file_error(path, "open it for reading", errno);
  InputFile in;
  in.file.reset(::fdopen(fd, "rb"));
  if (!in.file) {
    const int err = errno;
    ::close(fd);
    return file_error(path, "read it", err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return file_error(path, "stat it", errno);
  if (!S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: expected a regular {}, found {}", path, kind,
                      file_type(st.st_mode));
  }
  in.size = static_cast<std::uint64_t>(st.st_size);
  if (in.size > max_bytes) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                      "{}: expected a {} of at most {} bytes, found {} bytes", path, kind, max_bytes, in.size);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return file_error(path, "read it", errno);
  return in;
}

Result<std::string> read_input_file(const std::string& path, std::string_view kind, std::uint64_t max_bytes) {
  TENFERRO_ASSIGN_OR_RETURN(InputFile in, open_input_file(path, kind, max_bytes));
  std::string text(static_cast<std::size_t>(in.size), '\0');
  const std::size_t got = text.empty() ? 0 : std::fread(text.data(), 1, text.size(), in.file.get());
  if (got != text.size()) {
    if (std::ferror(in.file.get()) != 0) return file_error(path, "read it", errno);
    text.resize(got);  // the file shrank while it was read
  }
  return text;
}

}  // namespace tenferro
