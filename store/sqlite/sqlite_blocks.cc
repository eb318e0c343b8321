#include "store/sqlite/sqlite_blocks.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ticktrace::store {
namespace {

// Each element of order_blocks.orders (docs/store.md):
//   [order_id, instance, parent_order_id|null, first_utc_ns - block start,
//    first_tsc, total_ns|null, complete, missing|null, flags,
//    [[stage_id, latency_ns, flags], ...], detail offset, detail size]
void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendOptional(std::string* out, const std::optional<int64_t>& v) {
  if (v.has_value()) {
    AppendInt(out, *v);
  } else {
    out->append("null");
  }
}

// A JSON string: quotes, backslashes and control characters escaped.
void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      constexpr char kHex[] = "0123456789abcdef";
      out->append("\\u00");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// A reader of the JSON that AppendBlockOrderJson writes (SQLite may hand
// back the text as stored; nothing else is accepted).
class Json {
 public:
  explicit Json(std::string_view text) : text_(text) {}

  bool Expect(char c) {
    SkipSpace();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    SkipSpace();
    return at_ < text_.size() && text_[at_] == c;
  }
  bool Int(int64_t* v) {
    SkipSpace();
    const std::from_chars_result r =
        std::from_chars(text_.data() + at_, text_.data() + text_.size(), *v);
    if (r.ec != std::errc()) return false;
    at_ = static_cast<size_t>(r.ptr - text_.data());
    return true;
  }
  bool Null() {
    SkipSpace();
    if (text_.substr(at_, 4) != "null") return false;
    at_ += 4;
    return true;
  }
  bool OptionalInt(std::optional<int64_t>* v) {
    if (Null()) {
      v->reset();
      return true;
    }
    int64_t x = 0;
    if (!Int(&x)) return false;
    *v = x;
    return true;
  }
  bool OptionalString(std::string* out) {
    out->clear();
    if (Null()) return true;
    if (!Expect('"')) return false;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (at_ >= text_.size()) return false;
      const char e = text_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'u': {
          unsigned code = 0;
          if (at_ + 4 > text_.size()) return false;
          const std::from_chars_result r =
              std::from_chars(text_.data() + at_, text_.data() + at_ + 4, code, 16);
          if (r.ec != std::errc() || r.ptr != text_.data() + at_ + 4) return false;
          at_ += 4;
          if (code < 0x80) {
            out->push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (code >> 6)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (code >> 12)));
            out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
          }
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  // The text of the array that starts here (nested arrays of numbers only).
  bool Array(std::string_view* out) {
    SkipSpace();
    const size_t begin = at_;
    int depth = 0;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '[') ++depth;
      if (c == ']' && --depth == 0) {
        *out = text_.substr(begin, at_ - begin);
        return true;
      }
      if (c == '"' || depth == 0) return false;
    }
    return false;
  }
  bool Done() {
    SkipSpace();
    return at_ == text_.size();
  }
  size_t at() const { return at_; }

 private:
  void SkipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  std::string_view text_;
  size_t at_ = 0;
};

absl::Status BadBlock(int64_t block_key, size_t at, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("order block ", block_key, ": ", what, " at byte ", at));
}

// Walks the block's orders: `one(json)` reads one element's fields after its
// '[' and before its ']'.
template <typename One>
absl::Status ForEachElement(int64_t block_key, std::string_view orders_json, One one) {
  Json j(orders_json);
  if (!j.Expect('[')) return BadBlock(block_key, j.at(), "not a JSON array");
  if (j.Expect(']')) {
    return j.Done() ? absl::OkStatus() : BadBlock(block_key, j.at(), "trailing text");
  }
  int64_t position = 0;
  do {
    if (position >= kOrdersPerBlock) return BadBlock(block_key, j.at(), "too many orders");
    if (!j.Expect('[')) return BadBlock(block_key, j.at(), "an order is not an array");
    if (absl::Status s = one(j, position); !s.ok()) return s;
    if (!j.Expect(']')) return BadBlock(block_key, j.at(), "an order has extra fields");
    ++position;
  } while (j.Expect(','));
  if (!j.Expect(']') || !j.Done()) return BadBlock(block_key, j.at(), "trailing text");
  return absl::OkStatus();
}

}  // namespace

void AppendBlockOrderJson(int64_t order_id, int64_t instance,
                          std::optional<int64_t> parent_order_id, int64_t first_utc_ns,
                          int64_t block_start, int64_t first_tsc, std::optional<int64_t> total_ns,
                          bool complete, std::string_view missing, uint32_t flags,
                          std::string_view samples_json, size_t detail_offset, size_t detail_size,
                          std::string* out) {
  out->push_back('[');
  AppendInt(out, order_id);
  out->push_back(',');
  AppendInt(out, instance);
  out->push_back(',');
  AppendOptional(out, parent_order_id);
  out->push_back(',');
  AppendInt(out, first_utc_ns - block_start);
  out->push_back(',');
  AppendInt(out, first_tsc);
  out->push_back(',');
  AppendOptional(out, total_ns);
  out->append(complete ? ",1," : ",0,");
  if (missing.empty()) {
    out->append("null");
  } else {
    AppendJsonString(out, missing);
  }
  out->push_back(',');
  AppendInt(out, flags);
  out->push_back(',');
  out->append(samples_json);
  out->push_back(',');
  AppendInt(out, static_cast<int64_t>(detail_offset));
  out->push_back(',');
  AppendInt(out, static_cast<int64_t>(detail_size));
  out->push_back(']');
}

namespace {

// Samples as orders.samples has them: [[stage_id,latency_ns,flags],...].
void AppendSamplesJson(const std::vector<SampleCell>& cells, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->push_back('[');
    AppendInt(out, cells[i].stage_id);
    out->push_back(',');
    AppendInt(out, cells[i].latency_ns);
    out->push_back(',');
    AppendInt(out, cells[i].flags);
    out->push_back(']');
  }
  out->push_back(']');
}

BlockOrder FromCompact(int64_t block_key, int64_t position, CompactOrder&& c) {
  BlockOrder o;
  o.order_key = block_key * kOrdersPerBlock + position;
  o.order_id = c.order_id;
  o.instance = c.instance;
  o.parent_order_id = c.parent_order_id;
  o.first_utc_ns = c.first_utc_ns;
  o.first_tsc = c.first_tsc;
  o.total_ns = c.total_ns;
  o.complete = c.complete;
  o.missing = std::move(c.missing);
  o.flags = c.flags();
  o.cells = std::move(c.cells);
  PackDetail(c.detail, &o.detail);
  return o;
}

}  // namespace

absl::StatusOr<std::vector<BlockOrder>> ParseBlock(int64_t block_key, int64_t block_start,
                                                   std::string_view orders_json,
                                                   std::string_view detail) {
  std::vector<BlockOrder> orders;
  if (IsCompactBlock(orders_json)) {
    absl::StatusOr<std::vector<CompactOrder>> compact =
        DecodeCompactBlock(block_key, block_start, orders_json);
    if (!compact.ok()) return compact.status();
    orders.reserve(compact->size());
    for (CompactOrder& c : *compact) {
      orders.push_back(FromCompact(block_key, static_cast<int64_t>(orders.size()), std::move(c)));
    }
    return orders;
  }
  const absl::Status s =
      ForEachElement(block_key, orders_json, [&](Json& j, int64_t position) -> absl::Status {
        BlockOrder o;
        o.order_key = block_key * kOrdersPerBlock + position;
        int64_t first_delta = 0, complete = 0, flags = 0, offset = 0, size = 0;
        std::string_view samples;
        const bool read = j.Int(&o.order_id) && j.Expect(',') && j.Int(&o.instance) &&
                          j.Expect(',') && j.OptionalInt(&o.parent_order_id) && j.Expect(',') &&
                          j.Int(&first_delta) && j.Expect(',') && j.Int(&o.first_tsc) &&
                          j.Expect(',') && j.OptionalInt(&o.total_ns) && j.Expect(',') &&
                          j.Int(&complete) && j.Expect(',') && j.OptionalString(&o.missing) &&
                          j.Expect(',') && j.Int(&flags) && j.Expect(',') && j.Array(&samples) &&
                          j.Expect(',') && j.Int(&offset) && j.Expect(',') && j.Int(&size);
        if (!read) return BadBlock(block_key, j.at(), "not an order");
        if (flags < 0 || flags > UINT32_MAX || offset < 0 || size < 0 ||
            static_cast<uint64_t>(offset) > detail.size() ||
            static_cast<uint64_t>(size) > detail.size() - static_cast<uint64_t>(offset)) {
          return BadBlock(block_key, j.at(), "an order's field is out of range");
        }
        absl::StatusOr<std::vector<SampleCell>> cells = ParseSampleCells(samples);
        if (!cells.ok()) return BadBlock(block_key, j.at(), cells.status().message());
        o.cells = *std::move(cells);
        o.first_utc_ns = block_start + first_delta;
        o.complete = complete != 0;
        o.flags = static_cast<uint32_t>(flags);
        o.detail = std::string(detail.substr(static_cast<size_t>(offset), static_cast<size_t>(size)));
        orders.push_back(std::move(o));
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return orders;
}

absl::StatusOr<std::vector<BlockId>> ParseBlockIds(int64_t block_key,
                                                   std::string_view orders_json) {
  std::vector<BlockId> ids;
  if (IsCompactBlock(orders_json)) {
    absl::StatusOr<std::vector<CompactOrder>> compact =
        DecodeCompactBlock(block_key, 0, orders_json);
    if (!compact.ok()) return compact.status();
    for (const CompactOrder& c : *compact) ids.push_back({c.order_id, c.instance, c.first_tsc});
    return ids;
  }
  const absl::Status s =
      ForEachElement(block_key, orders_json, [&](Json& j, int64_t) -> absl::Status {
        BlockId id;
        std::optional<int64_t> skip;
        int64_t ignored = 0;
        std::string missing;
        std::string_view samples;
        const bool read = j.Int(&id.order_id) && j.Expect(',') && j.Int(&id.instance) &&
                          j.Expect(',') && j.OptionalInt(&skip) && j.Expect(',') &&
                          j.Int(&ignored) && j.Expect(',') && j.Int(&id.first_tsc) &&
                          j.Expect(',') && j.OptionalInt(&skip) && j.Expect(',') &&
                          j.Int(&ignored) && j.Expect(',') && j.OptionalString(&missing) &&
                          j.Expect(',') && j.Int(&ignored) && j.Expect(',') && j.Array(&samples) &&
                          j.Expect(',') && j.Int(&ignored) && j.Expect(',') && j.Int(&ignored);
        if (!read) return BadBlock(block_key, j.at(), "not an order");
        ids.push_back(id);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return ids;
}

absl::StatusOr<std::string> BlockOrdersJson(std::string_view orders) {
  if (!IsCompactBlock(orders)) return std::string(orders);
  // Decoded from a start of 0, first_utc_ns is already its distance from
  // the block's start.
  absl::StatusOr<std::vector<CompactOrder>> compact = DecodeCompactBlock(-1, 0, orders);
  if (!compact.ok()) return compact.status();
  std::string json = "[", samples, detail;
  for (const CompactOrder& c : *compact) {
    samples.clear();
    AppendSamplesJson(c.cells, &samples);
    const size_t offset = detail.size();
    PackDetail(c.detail, &detail);
    if (json.size() > 1) json.push_back(',');
    AppendBlockOrderJson(c.order_id, c.instance, c.parent_order_id, c.first_utc_ns, 0, c.first_tsc,
                         c.total_ns, c.complete, c.missing, c.flags(), samples, offset,
                         detail.size() - offset, &json);
  }
  json.push_back(']');
  return json;
}

absl::StatusOr<std::vector<std::string>> BlockDetails(std::string_view orders,
                                                      std::string_view detail) {
  absl::StatusOr<std::vector<BlockOrder>> parsed = ParseBlock(-1, 0, orders, detail);
  if (!parsed.ok()) return parsed.status();
  std::vector<std::string> details;
  details.reserve(parsed->size());
  for (BlockOrder& o : *parsed) details.push_back(std::move(o.detail));
  return details;
}

}  // namespace ticktrace::store
