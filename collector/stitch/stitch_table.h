// The Stitcher's containers (stitcher.h): a table keyed by order id with one
// 16-byte slot per id, a pool of order cells that never move, and a FIFO
// ring. Written for the stitcher's per-record path: no allocation once they
// have grown to the stream's size, and one probe to find what an id is.
//
// Not thread-safe.

#ifndef TICKTRACE_COLLECTOR_STITCH_TABLE_H_
#define TICKTRACE_COLLECTOR_STITCH_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ticktrace::collect {

// Open addressing with linear probing. A slot holds an id, a 32-bit value
// and a state with a 30-bit tag (what the value means is the caller's).
// Deletion shifts the following slots back (no tombstones), so probes stay
// as short as the load alone makes them; the table doubles above 70 % full.
// Fibonacci hashing spreads sequential ids (the common case) evenly.
class IdTable {
 public:
  enum State : uint32_t { kEmpty = 0, kOpen = 1, kLingering = 2, kMemory = 3 };
  static constexpr int kTagBits = 30;
  static constexpr uint32_t kTagMask = (1u << kTagBits) - 1;
  struct Slot {
    uint64_t id;
    uint32_t value;
    uint32_t meta;  // State in the low 2 bits, the tag above
    State state() const { return static_cast<State>(meta & 3); }
    uint32_t tag() const { return meta >> 2; }
    void Set(State s, uint32_t tag) { meta = static_cast<uint32_t>(s) | (tag & kTagMask) << 2; }
    void SetState(State s) { meta = (meta & ~3u) | static_cast<uint32_t>(s); }
  };
  static_assert(sizeof(Slot) == 16);

  explicit IdTable(size_t expected = 16) { Reset(expected); }

  // Empties it, with room for `expected` ids before it grows.
  void Reset(size_t expected) {
    size_t cap = 16;
    while (cap * 7 < expected * 10) cap *= 2;
    slots_.assign(cap, Slot{0, 0, 0});
    SetCapacity(cap);
    size_ = 0;
  }

  // The slot of `id`, or the empty slot where it would go.
  size_t Find(uint64_t id) const noexcept {
    size_t i = Home(id);
    for (;;) {
      const Slot& s = slots_[i];
      if (s.meta == 0 || s.id == id) return i;
      i = (i + 1) & mask_;
    }
  }
  Slot& at(size_t i) { return slots_[i]; }
  const Slot& at(size_t i) const { return slots_[i]; }
  bool Found(size_t i) const { return slots_[i].meta != 0; }

  // Fills the empty slot `i` (from Find(id)). The table may grow, which
  // moves slots: the id's slot is returned.
  size_t Insert(size_t i, uint64_t id, uint32_t value, State state, uint32_t tag) {
    if ((size_ + 1) * 10 > slots_.size() * 7) {
      Grow();
      i = Find(id);
    }
    Slot& s = slots_[i];
    s.id = id;
    s.value = value;
    s.Set(state, tag);
    ++size_;
    return i;
  }

  // Backward-shift deletion: each following slot of the run moves into the
  // hole when that keeps it reachable from its home.
  void Erase(size_t i) noexcept {
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (slots_[j].meta == 0) break;
      const size_t home = Home(slots_[j].id);
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].meta = 0;
    --size_;
  }

  void Prefetch(uint64_t id) const noexcept { __builtin_prefetch(&slots_[Home(id)]); }
  // The id's slot if it sits in its home slot (most do), else null: a
  // cheap look for prefetching what the slot points to.
  const Slot* AtHome(uint64_t id) const noexcept {
    const Slot& s = slots_[Home(id)];
    return s.meta != 0 && s.id == id ? &s : nullptr;
  }
  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.meta != 0) f(s);
    }
  }

 private:
  size_t Home(uint64_t id) const noexcept {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void SetCapacity(size_t cap) {
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
  }
  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{0, 0, 0});
    SetCapacity(slots_.size());
    for (const Slot& s : old) {
      if (s.meta != 0) slots_[Find(s.id)] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

// Cells in chunks of 4096: growing adds a chunk and never moves a cell, so
// references into the pool stay valid while it grows.
template <typename T>
class OrderPool {
 public:
  static constexpr uint32_t kChunkShift = 12;
  static constexpr uint32_t kChunkMask = (1u << kChunkShift) - 1;

  T& at(uint32_t i) { return chunks_[i >> kChunkShift][i & kChunkMask]; }
  const T& at(uint32_t i) const { return chunks_[i >> kChunkShift][i & kChunkMask]; }
  uint32_t size() const { return size_; }
  // One more cell, default-constructed; its index.
  uint32_t Add() {
    if (size_ == chunks_.size() << kChunkShift) {
      chunks_.push_back(std::make_unique<T[]>(size_t{1} << kChunkShift));
    }
    at(size_) = T{};
    return size_++;
  }
  // `n` default-constructed cells.
  void Reset(uint32_t n) {
    chunks_.clear();
    size_ = 0;
    while (size_ < n) Add();
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  uint32_t size_ = 0;
};

// A FIFO in a ring that doubles when full (a std::deque allocates a block
// every few hundred entries as it moves along).
template <typename T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T& front() const { return buf_[head_]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }
  void push_back(const T& v) {
    if (size_ == buf_.size()) Grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void Grow() {
    std::vector<T> bigger(buf_.empty() ? 64 : buf_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = (*this)[i];
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace ticktrace::collect

#endif  // TICKTRACE_COLLECTOR_STITCH_TABLE_H_
