// The traced process's defence against its own segment being shrunk under it.
//
// A segment shared with a group (TICKTRACE_SEGMENT_MODE=0660,
// TICKTRACE_SEGMENT_GROUP) can be opened read-write by every member, and
// any of them can ftruncate it. A store into a mapped page past the new end
// of the file raises SIGBUS, which would kill the traced process. Sealing
// cannot prevent it: file seals exist only for memfd files, and a POSIX shm
// file that the collector opens by name cannot carry them. Making the ring
// pages private would hide the records from the collector.
//
// So libtrace catches the fault instead. The handler, installed once per
// process when the segment is mapped, acts only on a SIGBUS whose address is
// inside this process's segment mapping: it maps anonymous zero pages over
// the whole mapping (mmap MAP_FIXED), so the faulting store completes into a
// dead copy when the handler returns, marks the segment truncated, and sends
// the faulting thread's next call to the slow path. From then on every trace
// call of every thread is a counted no-op (WriteSlow checks
// SegmentTruncated()), and TraceStatus() says so. A SIGBUS anywhere else goes
// to the handler installed before ours, or gets the default action. The hot
// path is unchanged: nothing runs there unless the fault happens.
//
// What is lost, and counted where: the records the collector had not
// drained when the file shrank (the collector drops the segment and says
// so); the record whose store faulted; records other threads wrote into the
// dead copy before their ring looked full (at most one ring each: they are
// not counted one by one); and every call after that, counted in
// TracerStatus::dropped_after_truncation.

#ifndef TICKTRACE_SRC_SEGMENT_GUARD_H_
#define TICKTRACE_SRC_SEGMENT_GUARD_H_

#include <cstdint>

namespace ticktrace::internal {

// Guards [base, base + bytes), this process's segment mapping, from now on;
// installs the SIGBUS handler on the first call. Cold path; REQUIRES: the
// caller holds the library's lock (one segment per process).
void GuardSegmentMapping(uint8_t* base, uint64_t bytes) noexcept;

// Forgets the guarded range and the truncation (a fork child, which unmaps
// its parent's segment and creates its own).
void ForgetSegmentGuard() noexcept;

// True once the segment was found shrunk and replaced by a dead copy. Any thread.
bool SegmentTruncated() noexcept;

// SIGBUS faults inside the segment that the handler absorbed.
uint64_t SegmentTruncationFaults() noexcept;

// Counts one trace call made a no-op because the segment was truncated.
void CountDroppedAfterTruncation() noexcept;
uint64_t DroppedAfterTruncation() noexcept;

}  // namespace ticktrace::internal

#endif  // TICKTRACE_SRC_SEGMENT_GUARD_H_
