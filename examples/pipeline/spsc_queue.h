// A single-producer, single-consumer queue laid out in shared memory, so that
// two processes can hand each other fixed-size messages without a lock or a
// system call.
//
//   SpscQueueLayout<T, kCapacity> (lives in the shared segment; all-zero = empty)
//   +-------------------------+------------------------+-----------------------+----------------+
//   | line 0: identity        | line 1: producer       | line 2: consumer      | T slots[kCap]  |
//   | magic, sizes, pids      | write_index, closed    | read_index            |                |
//   +-------------------------+------------------------+-----------------------+----------------+
//
// Contract: exactly one producer process (one thread) pushes and exactly one
// consumer process (one thread) pops. Indices grow forever and are reduced
// modulo kCapacity (a power of two). Each side keeps a private cached copy of
// the other side's index and reads the shared one only when its copy says the
// queue is full (producer) or empty (consumer), so in steady state each side
// touches only its own index line and the slots.
//
// The views (SpscProducer, SpscConsumer) hold the cached indices in the
// calling process's own memory; the layout holds only what both must see.
// Explicitly-sized types only: another process reads this.

#ifndef TICKTRACE_EXAMPLES_PIPELINE_SPSC_QUEUE_H_
#define TICKTRACE_EXAMPLES_PIPELINE_SPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ticktrace::examples {

inline constexpr size_t kQueueCacheLineSize = 64;
inline constexpr uint64_t kQueueMagic = 0x3151505358455454ull;  // "TTEXSPQ1" little-endian

template <typename T, uint32_t kCapacity>
struct SpscQueueLayout {
  static_assert(std::is_trivially_copyable_v<T>, "messages are copied byte for byte");
  static_assert(kCapacity >= 2 && (kCapacity & (kCapacity - 1)) == 0,
                "capacity must be a power of two");

  // Line 0, written by the creator before it publishes `magic` (release), read
  // by the opener after it sees `magic` (acquire).
  alignas(kQueueCacheLineSize) std::atomic<uint64_t> magic;
  uint32_t capacity;
  uint32_t element_size;
  int32_t creator_pid;
  // Written once by each side when it attaches; read by the other side only to
  // check that its peer is still alive while it waits.
  std::atomic<int32_t> producer_pid;
  std::atomic<int32_t> consumer_pid;

  // Line 1: written only by the producer.
  alignas(kQueueCacheLineSize) std::atomic<uint64_t> write_index;
  std::atomic<uint32_t> closed;  // 1 after the producer's last push

  // Line 2: written only by the consumer.
  alignas(kQueueCacheLineSize) std::atomic<uint64_t> read_index;

  alignas(kQueueCacheLineSize) T slots[kCapacity];

  static_assert(std::atomic<uint64_t>::is_always_lock_free);
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  static_assert(std::atomic<int32_t>::is_always_lock_free);
};

// The producer's view. Only one thread of one process may use it.
template <typename T, uint32_t kCapacity>
class SpscProducer {
 public:
  using Layout = SpscQueueLayout<T, kCapacity>;

  // REQUIRES: `layout` is initialised and outlives this view; no other producer.
  explicit SpscProducer(Layout* layout)
      : layout_(layout),
        // Relaxed: we are the only writer of write_index; a previous producer
        // (none in this example) would have left it where the consumer resumes.
        next_write_(layout->write_index.load(std::memory_order_relaxed)),
        // Acquire: pairs with the consumer's release store of read_index.
        cached_read_(layout->read_index.load(std::memory_order_acquire)) {}

  // Appends `value` and returns true, or returns false when the queue is full.
  bool TryPush(const T& value) noexcept {
    const uint64_t w = next_write_;
    if (w - cached_read_ >= kCapacity) {
      // Acquire: pairs with the consumer's release store in TryPop(); after it
      // we may overwrite the slots the consumer has finished reading.
      cached_read_ = layout_->read_index.load(std::memory_order_acquire);
      if (w - cached_read_ >= kCapacity) return false;
    }
    layout_->slots[w & (kCapacity - 1)] = value;
    next_write_ = w + 1;
    // Release: publishes slots[w]; pairs with the acquire load in TryPop().
    layout_->write_index.store(w + 1, std::memory_order_release);
    return true;
  }

  // Marks the end of the stream: the consumer finishes once it has popped
  // everything pushed before this call.
  void Close() noexcept {
    // Release: orders every earlier write_index store before `closed`; pairs
    // with the acquire load in SpscConsumer::Finished().
    layout_->closed.store(1, std::memory_order_release);
  }

 private:
  Layout* layout_;
  uint64_t next_write_;   // our copy of write_index
  uint64_t cached_read_;  // last read_index we saw; the real one is >= it
};

// The consumer's view. Only one thread of one process may use it.
template <typename T, uint32_t kCapacity>
class SpscConsumer {
 public:
  using Layout = SpscQueueLayout<T, kCapacity>;

  // REQUIRES: `layout` is initialised and outlives this view; no other consumer.
  explicit SpscConsumer(Layout* layout)
      : layout_(layout),
        // Relaxed: we are the only writer of read_index.
        next_read_(layout->read_index.load(std::memory_order_relaxed)),
        // Acquire: pairs with the producer's release store of write_index.
        cached_write_(layout->write_index.load(std::memory_order_acquire)) {}

  // Moves the oldest element into `*out` and returns true, or returns false
  // when the queue is empty.
  bool TryPop(T* out) noexcept {
    const uint64_t r = next_read_;
    if (r == cached_write_) {
      // Acquire: pairs with the producer's release store in TryPush(); makes
      // the slots up to the new write index visible.
      cached_write_ = layout_->write_index.load(std::memory_order_acquire);
      if (r == cached_write_) return false;
    }
    *out = layout_->slots[r & (kCapacity - 1)];
    next_read_ = r + 1;
    // Release: the slot has been copied out; pairs with the acquire load in
    // TryPush(), after which the producer may overwrite it.
    layout_->read_index.store(r + 1, std::memory_order_release);
    return true;
  }

  // True once the producer has called Close() (elements may remain).
  bool Closed() noexcept {
    // Acquire: pairs with the release store in Close().
    return layout_->closed.load(std::memory_order_acquire) != 0;
  }

  // True when the producer has closed the queue and every element it pushed
  // has been popped. Call after TryPop() returned false.
  bool Finished() noexcept {
    // Acquire: pairs with the release store in Close(); every push before it
    // is then visible through write_index, read below.
    if (layout_->closed.load(std::memory_order_acquire) == 0) return false;
    return layout_->write_index.load(std::memory_order_acquire) == next_read_;
  }

 private:
  Layout* layout_;
  uint64_t next_read_;     // our copy of read_index
  uint64_t cached_write_;  // last write_index we saw; the real one is >= it
};

}  // namespace ticktrace::examples

#endif  // TICKTRACE_EXAMPLES_PIPELINE_SPSC_QUEUE_H_
