#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace spmdcheck::base {
namespace {

// `PATH: WHAT: REASON` with the code errno `error` maps to; a missing file is NotFound with
// "PATH: no such file".
absl::Status Errno(int error, const std::string& path, absl::string_view what) {
  if (error == ENOENT && what == "cannot read") {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (error == EISDIR) return absl::FailedPreconditionError(absl::StrCat(path, ": is a directory"));
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat(path, ": ", what, ": ", std::strerror(error)));
}

// "1 GiB", "4 MiB" or "N bytes".
std::string Bytes(size_t n) {
  if (n != 0 && n % (size_t{1} << 30) == 0) return absl::StrCat(n >> 30, " GiB");
  if (n != 0 && n % (size_t{1} << 20) == 0) return absl::StrCat(n >> 20, " MiB");
  return absl::StrCat(n, " bytes");
}

// A file descriptor closed when this goes away.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now; the errno of a failed close is left for the caller.
  bool Close() {
    const int fd = fd_;
    fd_ = -1;
    return close(fd) == 0;
  }

 private:
  int fd_;
};

// Opens `path` for reading; a directory is an error (open() alone would accept it).
absl::StatusOr<int> OpenForReading(const std::string& path, struct stat& info) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, path, "cannot read");
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    close(fd);
    return Errno(error, path, "cannot read");
  }
  if (S_ISDIR(info.st_mode)) {
    close(fd);
    return Errno(EISDIR, path, "cannot read");
  }
  return fd;
}

// Reads `fd` to its end, keeping at most the last `keep` bytes.
absl::Status ReadToEnd(int fd, const std::string& path, size_t keep, std::string& out) {
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, path, "cannot read");
    }
    if (n == 0) return absl::OkStatus();
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > keep) out.erase(0, out.size() - keep);
  }
}

absl::Status WriteAll(int fd, const std::string& path, absl::string_view text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, path, "cannot write");
    }
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status WriteWithFlags(const std::string& path, absl::string_view text, int flags) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644));
  if (fd.get() < 0) return Errno(errno, path, "cannot write");
  if (absl::Status s = WriteAll(fd.get(), path, text); !s.ok()) return s;
  if (!fd.Close()) return Errno(errno, path, "cannot write");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  struct stat info;
  absl::StatusOr<int> opened = OpenForReading(path, info);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  if (S_ISREG(info.st_mode) && static_cast<size_t>(info.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": the file is ", info.st_size,
                                                     " bytes; files over ", Bytes(max_bytes),
                                                     " are not read"));
  }
  std::string text;
  if (S_ISREG(info.st_mode)) text.reserve(static_cast<size_t>(info.st_size));
  // One byte over the limit is kept, so that a file that grew (or a pipe) is still caught.
  const size_t keep = max_bytes == SIZE_MAX ? max_bytes : max_bytes + 1;
  if (absl::Status s = ReadToEnd(fd.get(), path, keep, text); !s.ok()) return s;
  if (text.size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": files over ", Bytes(max_bytes), " are not read"));
  }
  return text;
}

absl::StatusOr<std::string> ReadFileTail(const std::string& path, size_t max_bytes) {
  struct stat info;
  absl::StatusOr<int> opened = OpenForReading(path, info);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  if (S_ISREG(info.st_mode) && static_cast<size_t>(info.st_size) > max_bytes) {
    lseek(fd.get(), static_cast<off_t>(static_cast<size_t>(info.st_size) - max_bytes), SEEK_SET);
  }
  std::string text;
  if (absl::Status s = ReadToEnd(fd.get(), path, max_bytes, text); !s.ok()) return s;
  return text;
}

absl::Status WriteFile(const std::string& path, absl::string_view text) {
  return WriteWithFlags(path, text, O_TRUNC);
}

absl::Status AppendFile(const std::string& path, absl::string_view text) {
  return WriteWithFlags(path, text, O_APPEND);
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view text) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                          absl::StrCat(path, ": cannot create its directory: ", ec.message()));
    }
  }
  const std::string temp = absl::StrCat(path, ".tmp-", getpid());
  Fd fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Errno(errno, path, "cannot write");
  absl::Status status = WriteAll(fd.get(), path, text);
  if (status.ok() && fsync(fd.get()) != 0) status = Errno(errno, path, "cannot write");
  if (!fd.Close() && status.ok()) status = Errno(errno, path, "cannot write");
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = Errno(errno, path, "cannot replace");
  }
  if (!status.ok()) {
    unlink(temp.c_str());
    return status;
  }
  // The rename itself is durable once the directory is synced.
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  Fd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) fsync(dir_fd.get());
  return absl::OkStatus();
}

}  // namespace spmdcheck::base
