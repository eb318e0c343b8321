#include "viewer/format/text_table.h"

#include <algorithm>

namespace ticktrace::view::internal {

size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (const char c : text) {
    // Count every byte that is not a UTF-8 continuation byte.
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string Pad(const std::string& text, size_t width, bool left) {
  const size_t w = DisplayWidth(text);
  if (w >= width) return text;
  const std::string fill(width - w, ' ');
  return left ? text + fill : fill + text;
}

TextTable::TextTable(std::vector<std::string> header) : left_(header.size(), false) {
  if (!left_.empty()) left_[0] = true;
  rows_.push_back(std::move(header));
}

void TextTable::SetLeftAligned(size_t col) {
  if (col < left_.size()) left_[col] = true;
}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(rows_[0].size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> widths(rows_[0].size(), 0);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      // The last left-aligned column is not padded, so lines carry no
      // trailing spaces.
      line += (c + 1 == row.size() && left_[c]) ? row[c] : Pad(row[c], widths[c], left_[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);  // no trailing spaces
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace ticktrace::view::internal
