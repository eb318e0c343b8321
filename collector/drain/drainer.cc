#include "collector/drain/drainer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <span>

#include "absl/strings/str_cat.h"
#include "collector/time/time_base.h"

namespace ticktrace::collect {

DrainerSeed DrainerSeed::From(const Analyzer& analyzer) {
  DrainerSeed seed;
  seed.next_process_id = analyzer.NextProcessId();
  seed.counters = DrainerCounters::FromNamed(analyzer.stream_counters());
  for (const store::ProcessRow& row : analyzer.Processes()) {
    Process p;
    p.segment = row.segment;
    p.start_ticks = row.start_ticks;
    p.process_id = row.process_id;
    p.tag_count = analyzer.KnownTagCount(row.process_id);
    p.exited = row.exited_utc_ns.has_value();
    p.counters = analyzer.KnownProcessCounters(row.process_id);
    for (uint32_t slot = 0; slot < abi::kMaxSlots; ++slot) {
      Slot s;
      s.generation = analyzer.KnownGeneration(row.process_id, slot);
      s.dropped = analyzer.KnownDropped(row.process_id, slot);
      s.high_water = analyzer.HighWater(row.process_id, slot);
      if (s.generation || s.dropped || s.high_water) p.slots.emplace(slot, s);
    }
    seed.processes.push_back(std::move(p));
  }
  return seed;
}

Drainer::Drainer(const DrainerOptions& options, DrainerSeed seed)
    : options_(options), seed_(std::move(seed)) {
  next_process_id_ = std::max<uint32_t>(1, seed_.next_process_id);
  counters_ = seed_.counters;
  // segments_attached counts this collector's attachments: a restart attaches again.
  counters_.segments_attached = 0;
  refusal_log_ = std::make_unique<RefusalLog>(&log());
}

namespace {
constexpr std::pair<const char*, uint64_t DrainerCounters::*> kNamedFields[] = {
    {"segments_corrupt", &DrainerCounters::segments_corrupt},
    {"slots_corrupt", &DrainerCounters::slots_corrupt},
    {"segments_removed", &DrainerCounters::segments_removed},
    {"segments_foreign", &DrainerCounters::segments_foreign},
    {"segments_unreadable", &DrainerCounters::segments_unreadable},
    {"segments_oversized", &DrainerCounters::segments_oversized},
    {"segments_truncated", &DrainerCounters::segments_truncated},
    {"records_in_refused_segments", &DrainerCounters::records_in_refused_segments},
    {"journal_cap_stalls", &DrainerCounters::journal_cap_stalls},
};
}  // namespace

std::vector<std::pair<std::string, uint64_t>> DrainerCounters::Named() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [name, field] : kNamedFields) out.emplace_back(name, this->*field);
  return out;
}

DrainerCounters DrainerCounters::FromNamed(const std::map<std::string, uint64_t>& named) {
  DrainerCounters c;
  for (const auto& [name, field] : kNamedFields) {
    if (auto it = named.find(name); it != named.end()) c.*field = it->second;
  }
  return c;
}

Drainer::~Drainer() = default;

std::ostream& Drainer::log() const { return options_.log != nullptr ? *options_.log : std::cerr; }

void Drainer::LogRefusal(const std::string& line) {
  refusal_log_->Line(line, std::chrono::steady_clock::now());
}

bool Drainer::Refuse(const absl::Status& status, const SegmentOpenError& why) {
  const std::string said = absl::StrCat("ticktrace-collector: ", status.message(), "; not drained");
  switch (why.refusal) {
    case SegmentRefusal::kForeign:
    case SegmentRefusal::kOversized:
      // A readable segment refused whole: its waiting records are counted,
      // unless it has too many rings to count cheaply.
      ++(why.refusal == SegmentRefusal::kForeign ? counters_.segments_foreign
                                                 : counters_.segments_oversized);
      counters_.records_in_refused_segments += why.unconsumed_records;
      LogRefusal(why.unconsumed_unknown
                     ? absl::StrCat(said, " (records waiting in it: unknown; more than ",
                                    kMaxRingsCounted, " rings are not counted)\n")
                     : absl::StrCat(said, " (", why.unconsumed_records,
                                    " records waiting in it)\n"));
      return true;
    case SegmentRefusal::kUnreadable:
      if (why.error_number == ENOENT) return false;  // gone meanwhile: nothing to count
      ++counters_.segments_unreadable;
      LogRefusal(absl::StrCat(said, " (its records cannot be counted)\n"));
      return true;
    default:
      ++counters_.segments_corrupt;
      LogRefusal(absl::StrCat(said, "\n"));
      return true;
  }
}

void Drainer::Attach(const SegmentId& id, std::string* out) {
  SegmentOpenError why;
  absl::StatusOr<std::unique_ptr<SegmentReader>> reader =
      SegmentReader::Open(id.name, options_.limits, &why);
  const auto now = std::chrono::steady_clock::now();
  if (!reader.ok()) {
    const bool final_refusal = why.refusal == SegmentRefusal::kForeign ||
                               why.refusal == SegmentRefusal::kOversized ||
                               (why.refusal == SegmentRefusal::kUnreadable &&
                                why.error_number != ENOENT);
    // Remembered by the file as listed: Discover() matches the listing.
    const FileKey file{id.device, id.inode};
    if (final_refusal) {
      if (Refuse(reader.status(), why)) refused_.insert(file);
      failing_.erase(id.name);
      return;
    }
    // A segment may be caught mid-creation (magic not yet published, or a
    // header not yet complete): retry for a grace period before calling it corrupt.
    auto [it, inserted] = failing_.try_emplace(id.name, now);
    if (now - it->second >= options_.open_grace) {
      if (Refuse(reader.status(), why)) refused_.insert(file);
      failing_.erase(it);
    }
    return;
  }
  failing_.erase(id.name);
  auto seg = std::make_unique<Segment>();
  seg->reader = *std::move(reader);
  seg->file = FileKey{id.device, id.inode};
  const SegmentInfo& info = seg->reader->info();
  seg->slots.resize(info.slot_count);
  const DrainerSeed::Process* known = nullptr;
  for (const DrainerSeed::Process& p : seed_.processes) {
    if (p.segment == info.name && p.start_ticks == info.process_start_ticks) known = &p;
  }
  if (known != nullptr) {
    // Known from the journal (a restart): continue where it left off.
    seg->process_id = known->process_id;
    seg->tags_announced = known->tag_count;
    seg->exited_announced = known->exited;
    seg->counters_announced = known->counters;
    for (const auto& [slot, ks] : known->slots) {
      if (slot >= info.slot_count) continue;
      SlotTrack& t = seg->slots[slot];
      if (ks.generation) {
        t.generation = *ks.generation;
        t.generation_announced = true;
      }
      t.dropped_announced = ks.dropped;
      t.high_water = ks.high_water;
    }
  } else {
    seg->process_id = next_process_id_++;
    ProcessChunk c;
    c.process_id = seg->process_id;
    c.pid = info.pid;
    c.start_ticks = info.process_start_ticks;
    c.anchor_tsc = info.anchor_tsc;
    c.anchor_realtime_ns = info.anchor_realtime_ns;
    c.first_seen_utc_ns = RealtimeNowNs();
    c.segment = info.name;
    c.name = info.process_name;
    ChunkEncoder::Process(c, out);
  }
  ++counters_.segments_attached;
  AnnounceTags(*seg, out);
  segments_.emplace(id.name, std::move(seg));
}

void Drainer::AnnounceTags(Segment& s, std::string* out) {
  absl::StatusOr<std::vector<std::string>> tags = s.reader->Tags();
  if (!tags.ok()) return;  // unreadable entries: their records count as malformed
  if (tags->size() <= s.tags_announced) return;
  TagsChunk c;
  c.process_id = s.process_id;
  for (size_t id = s.tags_announced; id < tags->size(); ++id) {
    if ((*tags)[id].empty()) break;  // not published yet, or unreadable
    c.tags.emplace_back(static_cast<uint16_t>(id), (*tags)[id]);
  }
  if (c.tags.empty()) return;
  s.tags_announced += static_cast<uint32_t>(c.tags.size());
  ChunkEncoder::Tags(c, out);
}

void Drainer::RefreshCounters(Segment& s, std::string* out) {
  const SegmentCounters now = s.reader->counters();
  ProcessCountersChunk c;
  c.process_id = s.process_id;
  c.tags_rejected = now.tags_rejected;
  c.threads_without_slot = now.threads_without_slot;
  c.slotless_dropped = now.slotless_dropped;
  if (c.tags_rejected != s.counters_announced.tags_rejected ||
      c.threads_without_slot != s.counters_announced.threads_without_slot ||
      c.slotless_dropped != s.counters_announced.slotless_dropped) {
    ChunkEncoder::ProcessCounters(c, out);
    s.counters_announced = c;
  }
  for (uint32_t i = 0; i < s.slots.size(); ++i) {
    SlotTrack& t = s.slots[i];
    if (t.refused_counted_to.has_value()) {
      // Its thread goes on writing into it (the slot is never drained, so
      // never handed to another thread): those records are lost too.
      const uint64_t written = s.reader->Slot(i).write_index;
      if (written > *t.refused_counted_to) {
        counters_.records_in_refused_segments += written - *t.refused_counted_to;
        t.refused_counted_to = written;
      }
      continue;
    }
    if (t.corrupt) continue;
    // Reads line 1 (write_index, dropped): only at the discovery rate.
    const SlotView v = s.reader->Slot(i);
    if (v.dropped > t.dropped_announced) {
      SlotDroppedChunk d;
      d.process_id = s.process_id;
      d.slot = i;
      d.generation = v.generation;
      d.dropped_total = v.dropped;
      ChunkEncoder::SlotDropped(d, out);
      t.dropped_announced = v.dropped;
    }
  }
}

void Drainer::Discover(std::string* out) {
  absl::StatusOr<std::vector<SegmentId>> ids = ListSegments(options_.session);
  if (ids.ok()) {
    for (const SegmentId& id : *ids) {
      // A refused file under a new name is still refused: no open, no read.
      if (segments_.contains(id.name) || refused_.contains(FileKey{id.device, id.inode})) continue;
      Attach(id, out);
    }
    // Forget refusals of files that are gone, so a new file is tried.
    absl::flat_hash_set<std::string> present;
    absl::flat_hash_set<FileKey> present_files;
    for (const SegmentId& id : *ids) {
      present.insert(id.name);
      present_files.insert(FileKey{id.device, id.inode});
    }
    for (auto it = refused_.begin(); it != refused_.end();) {
      if (present_files.contains(*it)) {
        ++it;
      } else {
        refused_.erase(it++);
      }
    }
    for (auto it = failing_.begin(); it != failing_.end();) {
      if (present.contains(it->first)) {
        ++it;
      } else {
        failing_.erase(it++);
      }
    }
  }
  for (auto& [name, seg] : segments_) {
    if (seg->reader->truncated()) continue;  // dropped in CommitPass()
    const SegmentInfo& info = seg->reader->info();
    if (!seg->dying && !ProcessAlive(info.pid, info.process_start_ticks)) seg->dying = true;
    AnnounceTags(*seg, out);
    RefreshCounters(*seg, out);
  }
}

size_t Drainer::DrainSlot(Segment& s, uint32_t slot, std::string* out) {
  SlotTrack& t = s.slots[slot];
  if (t.corrupt) return 0;
  const std::optional<uint64_t> high_water = t.high_water;
  while (true) {
    buffer_.clear();
    uint64_t generation = 0;
    absl::StatusOr<uint64_t> end =
        s.reader->Peek(slot, options_.max_records_per_ring, &buffer_, &generation);
    if (!end.ok()) {
      if (s.reader->truncated()) return 0;  // the whole segment goes in CommitPass()
      if (absl::IsResourceExhausted(end.status())) {
        // A ring claimed after the segment was opened would take it over the
        // limit: it is refused like a segment, named once, its waiting
        // records counted, and skipped from then on.
        const SlotView v = s.reader->Slot(slot);
        const uint64_t waiting = v.write_index - v.read_index;
        counters_.records_in_refused_segments += waiting;
        LogRefusal(absl::StrCat("ticktrace-collector: ", end.status().message(),
                                "; not drained (", waiting, " records waiting in it)\n"));
        t.corrupt = true;
        t.refused_counted_to = v.write_index;
        return 0;
      }
      MarkCorrupt(s, slot, std::string(end.status().message()));
      return 0;
    }
    const size_t n = buffer_.size();
    if (n == 0) return 0;
    const uint64_t first = *end - n;
    if (*end < first) {
      // The reader follows indices across 2^64 (abi.h), but no chunk can
      // carry a range that wraps (stream.h): 2^64 records take 584 years at
      // 10^9 a second, so such indices were written by someone else.
      MarkCorrupt(s, slot,
                  absl::StrCat("segment ", s.reader->info().name, " slot ", slot,
                               ": ring indices wrap 2^64 (read ", first, ", ", n,
                               " records waiting)"));
      return 0;
    }
    if (t.committed_read.has_value() && first != *t.committed_read) {
      // Only the collector writes read_index: someone else moved it (back,
      // to read records again; or ahead). Nothing of this peek is encoded.
      MarkCorrupt(s, slot,
                  absl::StrCat("segment ", s.reader->info().name, " slot ", slot,
                               ": read index moved from ", *t.committed_read, " to ", first,
                               " (only the collector writes it)"));
      return 0;
    }
    // Records at or below the journal's mark were made durable by an earlier
    // collector that died before committing them: skip, but commit past them.
    size_t skip = 0;
    if (high_water.has_value() && *high_water > first) {
      skip = static_cast<size_t>(std::min<uint64_t>(*high_water - first, n));
    }
    if (skip == n) {
      // The whole batch is in the journal already, so it is durable: consume
      // it now and look again. Left for CommitPass() it would never be
      // committed when nothing else in the pass makes a chunk (a pass without
      // chunks is idle and commits nothing), and each pass would peek the same
      // batch: the ring, and a stopping collector, would never get past it.
      // Bounded: each round moves read_index towards the mark.
      s.reader->Commit(slot, *end);
      t.committed_read = *end;
      continue;
    }
    {
      // The generation is read after the copy: unconsumed records keep the
      // slot from being re-claimed, so they all belong to this generation.
      // The slot's line 0 (tid, name) is read only when a new owner appears.
      if (!t.generation_announced || generation != t.generation) {
        const SlotView v = s.reader->Slot(slot);
        ThreadChunk c;
        c.process_id = s.process_id;
        c.slot = slot;
        c.generation = generation;
        c.tid = v.tid;
        c.name = v.thread_name;
        ChunkEncoder::Thread(c, out);
        t.generation = generation;
        t.generation_announced = true;
      }
      // Tags used before we saw them: refresh the table first.
      for (size_t i = skip; i < n; ++i) {
        const uint16_t tag = buffer_[i].tag_id;
        if (tag != abi::kTagInvalid && tag >= s.tags_announced) {
          AnnounceTags(s, out);
          break;
        }
      }
      std::span<const abi::Record> records(buffer_.data() + skip, n - skip);
      ChunkEncoder::Records(s.process_id, slot, t.generation, first + skip, records, out);
    }
    // The read index moves only in CommitPass(), after the chunks are
    // durable; a dying segment with more than one batch per ring left is
    // finished over the next passes.
    pending_.push_back(PendingCommit{&s, slot, *end});
    return n - skip;
  }
}

void Drainer::MarkCorrupt(Segment& s, uint32_t slot, std::string_view why) {
  SlotTrack& t = s.slots[slot];
  if (t.corrupt) return;
  t.corrupt = true;
  ++counters_.slots_corrupt;
  log() << "ticktrace-collector: " << why << " (pid " << s.reader->info().pid
        << "): ring no longer drained; its records are lost (how many: unknown)\n";
}

size_t Drainer::Pass(bool discover, std::string* out) {
  const auto now = std::chrono::steady_clock::now();
  if (discover || now - last_discovery_ >= options_.discovery_interval) {
    last_discovery_ = now;
    refusal_log_->Tick(now);
    Discover(out);
  }
  size_t records = 0;
  max_fill_ = 0;
  for (auto& [name, seg] : segments_) {
    // One look at every ring's indices (one SIGBUS guard), then a Peek only
    // of the rings with something in them: a Peek of an empty ring finds
    // nothing, so skipping it changes nothing.
    if (seg->reader->PendingRecords(&pending_records_)) {
      const double capacity = std::max<double>(1, seg->reader->info().ring_capacity);
      for (uint32_t i = 0; i < seg->slots.size(); ++i) {
        // A corrupt ring's indices say nothing (its fill would pace the loop).
        if (pending_records_[i] == 0 || seg->slots[i].corrupt) continue;
        max_fill_ = std::max(max_fill_, static_cast<double>(pending_records_[i]) / capacity);
        records += DrainSlot(*seg, i, out);
      }
    }
    if (seg->reader->truncated()) continue;  // dropped in CommitPass()
    if (seg->dying && !seg->exited_announced) {
      // Is everything out? Only when no ring had anything left this pass.
      bool drained = true;
      for (const PendingCommit& p : pending_) {
        if (p.segment == seg.get()) drained = false;
      }
      if (drained) {
        RefreshCounters(*seg, out);
        ProcessExitedChunk c;
        c.process_id = seg->process_id;
        c.utc_ns = RealtimeNowNs();
        ChunkEncoder::ProcessExited(c, out);
        seg->exited_announced = true;
      }
    }
    if (seg->dying && seg->exited_announced) to_remove_.push_back(name);
  }
  return records;
}

void Drainer::CommitPass() {
  for (const PendingCommit& p : pending_) {
    // Release inside Commit(): pairs with the producer's acquire of read_index.
    p.segment->reader->Commit(p.slot, p.end);
    p.segment->slots[p.slot].committed_read = p.end;
  }
  pending_.clear();
  for (auto& [name, seg] : segments_) {
    if (seg->dying) continue;
    skip_slots_.assign(seg->slots.size(), false);
    for (uint32_t i = 0; i < seg->slots.size(); ++i) skip_slots_[i] = seg->slots[i].corrupt;
    seg->reader->FreeDrainedSlots(skip_slots_);
  }
  for (const std::string& name : to_remove_) {
    auto it = segments_.find(name);
    if (it == segments_.end()) continue;
    absl::Status s = RemoveSegment(name);
    if (s.ok()) ++counters_.segments_removed;
    segments_.erase(it);
  }
  to_remove_.clear();
  // Segments found shrunk under the reader (a SIGBUS was caught): whatever
  // they still hold cannot be read safely. Dropped, named once, not retried
  // while the name exists; never removed (the file may not be ours to judge).
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (!it->second->reader->truncated()) {
      ++it;
      continue;
    }
    ++counters_.segments_truncated;
    log() << "ticktrace-collector: segment " << it->first
          << ": shrank while being drained; dropped (records drained before are kept)\n";
    refused_.insert(it->second->file);
    it = segments_.erase(it);
  }
}

}  // namespace ticktrace::collect
