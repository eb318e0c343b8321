#include "protoc_raw.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace ticktrace::testing {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// C-unescapes what protoc's CEscape wrote: \n \r \t \" \' \\ and \NNN octal.
std::string Unescape(const std::string& quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    const char c = quoted[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    const char e = quoted[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case '"': case '\'': case '\\': out.push_back(e); break;
      default: {
        int v = 0, digits = 0;
        while (digits < 3 && i < quoted.size() && quoted[i] >= '0' && quoted[i] <= '7') {
          v = v * 8 + (quoted[i++] - '0');
          ++digits;
        }
        --i;
        out.push_back(static_cast<char>(v));
      }
    }
  }
  return out;
}

// The body of a nested message, re-encoded.
std::string Encode(const std::vector<RawField>& fields) {
  std::string out;
  for (const RawField& f : fields) {
    const uint64_t n = static_cast<uint64_t>(f.number);
    if (f.nested || (!f.scalar.empty() && f.scalar.front() == '"')) {
      const std::string b = f.Bytes();
      PutVarint(&out, n << 3 | 2);
      PutVarint(&out, b.size());
      out += b;
    } else if (f.scalar.rfind("0x", 0) == 0) {
      const uint64_t v = std::strtoull(f.scalar.c_str() + 2, nullptr, 16);
      const bool wide = f.scalar.size() == 18;
      PutVarint(&out, n << 3 | (wide ? 1 : 5));
      for (int i = 0; i < (wide ? 8 : 4); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    } else {
      PutVarint(&out, n << 3);
      PutVarint(&out, std::strtoull(f.scalar.c_str(), nullptr, 10));
    }
  }
  return out;
}

}  // namespace

std::vector<const RawField*> RawField::All(int n) const {
  std::vector<const RawField*> out;
  for (const RawField& c : children) {
    if (c.number == n) out.push_back(&c);
  }
  return out;
}

const RawField* RawField::One(int n) const {
  for (const RawField& c : children) {
    if (c.number == n) return &c;
  }
  return nullptr;
}

std::string RawField::Bytes() const { return nested ? Encode(children) : Unescape(scalar); }

std::string RawField::Text() const {
  if (!nested) return scalar;
  std::string out = "{";
  for (const RawField& c : children) out += " " + std::to_string(c.number) + ": " + c.Text();
  return out + " }";
}

std::map<std::string, std::string> RenderAll(const std::set<std::string>& values,
                                             const std::string& dir) {
  std::string message;
  for (const std::string& v : values) {
    PutVarint(&message, 1 << 3 | 2);
    PutVarint(&message, v.size());
    message += v;
  }
  std::map<std::string, std::string> out;
  const std::optional<RawField> decoded = DecodeRaw(message, dir);
  if (!decoded || decoded->children.size() != values.size()) {
    ADD_FAILURE() << "RenderAll: protoc did not give one field per value";
    return out;
  }
  size_t i = 0;
  for (const std::string& v : values) out[v] = decoded->children[i++].Text();
  return out;
}
uint64_t RawField::Varint() const { return std::strtoull(scalar.c_str(), nullptr, 10); }
uint64_t RawField::Fixed64() const { return std::strtoull(scalar.c_str() + 2, nullptr, 16); }

std::optional<std::string> ProtocPath() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    const std::string p = std::string(dir) + "/protoc";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return std::nullopt;
}

std::optional<RawField> DecodeRaw(const std::string& bytes, const std::string& dir) {
  const std::optional<std::string> protoc = ProtocPath();
  if (!protoc) {
    ADD_FAILURE() << "no protoc";
    return std::nullopt;
  }
  const std::string in = dir + "/.decode_raw.in", out = dir + "/.decode_raw.out";
  std::ofstream(in, std::ios::binary) << bytes;
  const std::string cmd = *protoc + " --decode_raw < '" + in + "' > '" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream text_in(out);
  std::stringstream text;
  text << text_in.rdbuf();
  std::remove(in.c_str());
  std::remove(out.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "protoc --decode_raw failed: " << text.str();
    return std::nullopt;
  }
  RawField root;
  std::vector<RawField*> stack{&root};
  std::string line;
  while (std::getline(text, line)) {
    size_t i = line.find_first_not_of(' ');
    if (i == std::string::npos) continue;
    if (line[i] == '}') {
      stack.pop_back();
      continue;
    }
    const size_t end = line.find_first_of(":{", i);
    RawField f;
    f.number = std::atoi(line.substr(i, end - i).c_str());
    if (line[end] == '{') {
      f.nested = true;
      stack.back()->children.push_back(std::move(f));
      stack.push_back(&stack.back()->children.back());
    } else {
      f.scalar = line.substr(end + 2);
      stack.back()->children.push_back(std::move(f));
    }
  }
  return root;
}

}  // namespace ticktrace::testing
