// Column-aligned text tables for terminal output. Private to the viewer.
#ifndef TICKTRACE_VIEW_SRC_TEXT_TABLE_H_
#define TICKTRACE_VIEW_SRC_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace ticktrace::view::internal {

// Columns are padded to their widest cell (counted in code points, so "µs"
// is two wide); the first column is left-aligned, the others right-aligned
// unless SetLeftAligned() says otherwise.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);

  // Left-aligns column `col` (0-based).
  void SetLeftAligned(size_t col);
  // Appends a row. REQUIRES: as many cells as header columns.
  void AddRow(std::vector<std::string> cells);
  // The header, then every row, each line ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
  std::vector<bool> left_;
};

// The number of code points in UTF-8 `text` (its width in a terminal, for
// the characters the viewer prints).
size_t DisplayWidth(const std::string& text);

// `text` padded with spaces on the right (left=true) or left to `width`.
std::string Pad(const std::string& text, size_t width, bool left);

}  // namespace ticktrace::view::internal

#endif  // TICKTRACE_VIEW_SRC_TEXT_TABLE_H_
