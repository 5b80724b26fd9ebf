// Escaping text from a run for the writers' markup (markup.h): any bytes
// in, valid UTF-8 without forbidden control characters out; and writing a
// report file whole or saying why not (text_file.h).
#include "markup.h"
#include "text_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace verbfault::reports {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD

std::string fffd(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += kFffd;
  return out;
}

TEST(CleanText, KeepsValidUtf8AndTheWhitespaceXmlAllows) {
  const std::string text =
      "plain, \xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF\t\n\r";
  EXPECT_EQ(clean_text(text), text);
  EXPECT_EQ(clean_text(""), "");
}

TEST(CleanText, InvalidUtf8BecomesOneReplacementPerByte) {
  EXPECT_EQ(clean_text("a\xFF"
                       "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(clean_text("\xC0\xAF"), fffd(2));          // overlong '/'
  EXPECT_EQ(clean_text("\xE0\x80\xAF"), fffd(3));      // overlong, three bytes
  EXPECT_EQ(clean_text("\xED\xA0\x80"), fffd(3));      // a UTF-16 surrogate
  EXPECT_EQ(clean_text("\xF4\x90\x80\x80"), fffd(4));  // above U+10FFFF
  EXPECT_EQ(clean_text("\xF5\x80\x80\x80"), fffd(4));
  EXPECT_EQ(clean_text("end \xE2\x82"), "end " + fffd(2));  // cut short
  EXPECT_EQ(clean_text("\x80x"), kFffd + "x");              // a lone continuation byte
  EXPECT_EQ(clean_text("\xE2(\xA1"), kFffd + "(" + kFffd);
}

TEST(CleanText, ControlCharactersBecomeReplacements) {
  EXPECT_EQ(clean_text(std::string("nul\0", 4)), "nul" + kFffd);
  EXPECT_EQ(clean_text("\x01\x08\x0B\x0C\x1B[0m\x1F\x7F"), fffd(5) + "[0m" + fffd(2));
}

TEST(XmlEscape, EscapesMarkupAndCleansText) {
  EXPECT_EQ(xml_escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");
  EXPECT_EQ(xml_escape(std::string("\0<\xFF", 3)), kFffd + "&lt;" + kFffd);
}

TEST(MarkdownCell, OneLineWithPipesEscaped) {
  EXPECT_EQ(markdown_cell("a|b"), "a\\|b");
  EXPECT_EQ(markdown_cell("two\nlines\r\tand a tab"), "two lines  and a tab");
  EXPECT_EQ(markdown_cell("bad \xFF"), "bad " + kFffd);
}

TEST(MarkdownCode, FenceIsLongerThanAnyBacktickRunInside) {
  EXPECT_EQ(markdown_code("plain"), "`plain`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("a``b`c"), "```a``b`c```");
  // A span that starts or ends with a backtick is padded by a space.
  EXPECT_EQ(markdown_code("`x"), "`` `x ``");
  EXPECT_EQ(markdown_code("x``"), "``` x`` ```");
  EXPECT_EQ(markdown_code("`"), "`` ` ``");
  // Still a table cell: the pipe escaped, one line.
  EXPECT_EQ(markdown_code("a | b\nc"), "`a \\| b c`");
}

TEST(WriteTextFile, AFullDiskIsAnErrorNamingThePath) {
  ASSERT_TRUE(std::filesystem::exists("/dev/full"));
  try {
    write_text_file("/dev/full", "a report that does not fit\n");
    FAIL() << "no error writing to /dev/full";
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("'/dev/full'"), std::string::npos) << what;
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
  }
}

TEST(WriteTextFile, AMissingDirectoryIsAnErrorNamingThePath) {
  const std::string path = "/nonexistent-verbfault-dir/report.md";
  try {
    write_text_file(path, "x");
    FAIL() << "no error writing " << path;
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

TEST(WriteTextFile, WritesTheBytesWhole) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "verbfault-text-file-test.txt";
  const std::string text = std::string("line\n\0binary\xFF", 13);
  write_text_file(path, text);
  EXPECT_EQ(std::filesystem::file_size(path), text.size());
  write_text_file(path, "short");  // replaces it
  EXPECT_EQ(std::filesystem::file_size(path), 5u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace verbfault::reports
