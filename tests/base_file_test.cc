// base/file.h: whole-file reads and writes, the atomic replace, and errors that name the path.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "base/file.h"
#include "base/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spmdcheck::base {
namespace {

using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("spmdcheck_base_file_test_" + name + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

int FilesIn(const std::string& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(BaseFile, ReadsBackWhatWasWritten) {
  const std::string path = TempDir("roundtrip") + "/a.txt";
  const std::string text = std::string("line 1\nline 2\n") + std::string(1, '\0') + "binary\xff";
  ASSERT_TRUE(WriteFile(path, text).ok());
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, text);
  // A second write truncates: nothing of the longer first text is left.
  ASSERT_TRUE(WriteFile(path, "short").ok());
  EXPECT_EQ(ReadFile(path).value(), "short");
  ASSERT_TRUE(WriteFile(path, "").ok());
  EXPECT_EQ(ReadFile(path).value(), "");
}

TEST(BaseFile, AppendAddsToTheEndAndCreates) {
  const std::string path = TempDir("append") + "/log.txt";
  ASSERT_TRUE(AppendFile(path, "one\n").ok());
  ASSERT_TRUE(AppendFile(path, "two\n").ok());
  EXPECT_EQ(ReadFile(path).value(), "one\ntwo\n");
}

TEST(BaseFile, MissingFileIsNotFoundNamingThePath) {
  const std::string path = TempDir("missing") + "/absent.hlo";
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(absl::IsNotFound(read.status())) << read.status();
  EXPECT_EQ(read.status().message(), path + ": no such file");
  EXPECT_TRUE(absl::IsNotFound(ReadFileTail(path, 10).status()));
}

TEST(BaseFile, DirectoryIsAnErrorForReadsAndWrites) {
  const std::string dir = TempDir("directory");
  absl::StatusOr<std::string> read = ReadFile(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(read.status())) << read.status();
  EXPECT_EQ(read.status().message(), dir + ": is a directory");
  absl::Status written = WriteFile(dir, "x");
  EXPECT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.message()), HasSubstr(dir));
  written = WriteFileAtomic(dir, "x");
  EXPECT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.message()), HasSubstr(dir));
  // The failed atomic write left no temporary file beside the directory.
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp-" + std::to_string(getpid())));
}

TEST(BaseFile, WriteIntoMissingDirectoryNamesThePath) {
  const std::string path = TempDir("nodir") + "/no/such/dir/out.txt";
  absl::Status written = WriteFile(path, "x");
  EXPECT_TRUE(absl::IsNotFound(written)) << written;
  EXPECT_THAT(std::string(written.message()), HasSubstr(path + ": cannot write: "));
}

TEST(BaseFile, UnreadableFileIsPermissionDenied) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const std::string path = TempDir("unreadable") + "/secret.txt";
  ASSERT_TRUE(WriteFile(path, "x").ok());
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  absl::StatusOr<std::string> read = ReadFile(path);
  EXPECT_TRUE(absl::IsPermissionDenied(read.status())) << read.status();
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(path + ": cannot read: "));
}

TEST(BaseFile, AtomicWriteReplacesAndLeavesNoTemporaryFile) {
  const std::string dir = TempDir("atomic");
  const std::string path = dir + "/sub/state.json";  // The directory is made on the way.
  ASSERT_TRUE(WriteFileAtomic(path, "{\"a\": 1}\n").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "{\"a\": 2}\n").ok());
  EXPECT_EQ(ReadFile(path).value(), "{\"a\": 2}\n");
  EXPECT_EQ(FilesIn(dir + "/sub"), 1);
}

TEST(BaseFile, AtomicWriteUnderAFileFailsNamingThePath) {
  const std::string dir = TempDir("underfile");
  ASSERT_TRUE(WriteFile(dir + "/file", "x").ok());
  absl::Status written = WriteFileAtomic(dir + "/file/inside.json", "{}");
  EXPECT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.message()), HasSubstr("file/inside.json"));
  EXPECT_EQ(ReadFile(dir + "/file").value(), "x");
  EXPECT_EQ(FilesIn(dir), 1);
}

TEST(BaseFile, SizeLimitAndTail) {
  const std::string path = TempDir("limit") + "/big.txt";
  ASSERT_TRUE(WriteFile(path, "0123456789").ok());
  absl::StatusOr<std::string> read = ReadFile(path, 4);
  EXPECT_TRUE(absl::IsResourceExhausted(read.status())) << read.status();
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(path + ": the file is 10 bytes"));
  EXPECT_EQ(ReadFile(path, 10).value(), "0123456789");
  EXPECT_EQ(ReadFileTail(path, 4).value(), "6789");
  EXPECT_EQ(ReadFileTail(path, 100).value(), "0123456789");
}

TEST(BaseStatus, LocationsAndContext) {
  EXPECT_EQ(SourceLocation("a.hlo", 3, 7), "a.hlo:3:7");
  const absl::Status wrapped =
      WithContext(absl::NotFoundError("x: no such file"), "cannot load the rules");
  EXPECT_TRUE(absl::IsNotFound(wrapped));
  EXPECT_EQ(wrapped.message(), "cannot load the rules: x: no such file");
  EXPECT_TRUE(WithContext(absl::OkStatus(), "anything").ok());
}

}  // namespace
}  // namespace spmdcheck::base
