// How fast the store keeps what the collector's stitcher emits, and how big
// it gets: finished orders of the demo's shape (a tick order of 4 records and
// its child order of 4: 8 records, 7 stamps, 8 stage samples per pair) go
// through the collector's StoreSink (interval statistics, detail policy)
// into the SQLite backend, in blocking mode as in a replay. One run per
// detail policy, side by side. Prints samples/s and bytes per record.
// Then the same orders (--detail all) into ClickHouse: a
// clickhouse-server of its own (tests/support/clickhouse_server.h: temporary
// config and data directory, loopback port, stopped at the end), beside
// SQLite's figure; skipped with the reason when it is not installed.
//
//   store_write_bench [--orders N] [--dir DIR] [--orders-per-batch N] [--no-clickhouse]
//                     [--shape demo|two-stamp] [--rate RECORDS_PER_S] [--breakdown]
//
// --breakdown: where the --detail all store's bytes go: its pages per table
// and index (SQLite's dbstat), and the order blocks' payload as stored beside
// what the older encoding (a JSON array and packed details) takes for the
// same orders.
//
// --shape two-stamp: instead of the demo's pairs, orders of two stamps on one
// thread ("rx", "tx": 2 records, one sample "rx->tx" and the total) from 2
// processes x 2 threads taking turns, ids counting up per thread from
// (thread + 1) << 40 as daemon_bench hands them out; their first stamps
// --rate records/s apart (default 500000: 250 k orders/s; the rate of the
// orders' own clock, not how fast this program writes them).
//
// --orders-per-batch: the sink's orders per Write (default 20000, the
// collector's), for both backends.

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "collector/stitch/stitcher.h"
#include "store/clickhouse/clickhouse_writer.h"
#include <sqlite3.h>

#include "store/sqlite/sqlite_blocks.h"
#include "store/sqlite/sqlite_writer.h"
#include "collector/sinks/store_sink.h"
#include "tests/support/clickhouse_server.h"

namespace {

using ticktrace::collect::FinishedOrder;
namespace store = ticktrace::store;
using store::SampleDetail;
using store::StampDetail;

constexpr int64_t kT0 = 1'800'000'000'000'000'000;
constexpr double kNsPerTick = 0.5;

StampDetail Stamp(const char* tag, uint32_t process, uint32_t tid, int cpu, uint64_t tsc) {
  StampDetail s;
  s.tag = tag;
  s.process_id = process;
  s.tid = tid;
  s.cpu = cpu;
  s.tsc = tsc;
  s.utc_ns = kT0 + static_cast<int64_t>(static_cast<double>(tsc) * kNsPerTick);
  return s;
}

SampleDetail Sample(const char* stage, const StampDetail& a, double latency_ns, uint8_t flags) {
  SampleDetail r;
  r.stage = stage;
  r.start_utc_ns = a.utc_ns;
  r.latency_ns = latency_ns;
  r.process_begin = static_cast<int32_t>(a.process_id);
  r.process_end = static_cast<int32_t>(a.process_id);
  r.cpu_begin = a.cpu;
  r.cpu_end = a.cpu;
  r.flags = flags;
  return r;
}

// A tick (id 2k+1, 10 us apart) and its child order (id 2k+2).
void MakePair(uint64_t k, std::mt19937_64& rng, std::vector<FinishedOrder>* out) {
  std::lognormal_distribution<double> hop(6.5, 0.6);  // ~700 ticks, long tail
  const uint64_t t0 = 1'000'000 + k * 20'000;
  uint64_t t = t0;
  auto next = [&] { return t += static_cast<uint64_t>(hop(rng)); };
  FinishedOrder tick;
  tick.order.order_id = 2 * k + 1;
  const StampDetail rx = Stamp("md_rx", 1, 101, 0, t);
  const StampDetail dec = Stamp("md_decoded", 1, 101, 0, next());
  const StampDetail in = Stamp("strat_in", 2, 202, 1, next());
  StampDetail decide = Stamp("decide", 2, 202, 1, next());
  decide.is_span = true;
  decide.cpu_end = 1;
  decide.duration_ns = 2000;
  tick.order.first_utc_ns = rx.utc_ns;
  tick.order.complete = true;
  tick.order.samples = {Sample("md_rx->md_decoded", rx, (dec.tsc - rx.tsc) * kNsPerTick, 0),
                  Sample("md_decoded->strat_in", dec, (in.tsc - dec.tsc) * kNsPerTick, 4),
                  Sample("decide", decide, 2000, 0)};
  tick.order.stamps = {rx, dec, in, decide};
  tick.order.SetFirstTscFromStamps();
  FinishedOrder child;
  child.order.order_id = 2 * k + 2;
  child.order.parent_order_id = 2 * k + 1;
  const StampDetail out_ = Stamp("strat_out", 2, 202, 1, next());
  const StampDetail gw_in = Stamp("gw_in", 3, 303, 0, next());
  const StampDetail sent = Stamp("gw_sent", 3, 303, 0, next());
  child.order.first_utc_ns = rx.utc_ns;
  child.order.complete = true;
  child.order.total_ns = (sent.tsc - rx.tsc) * kNsPerTick;
  child.order.samples = {Sample("strat_in->strat_out", in, (out_.tsc - in.tsc) * kNsPerTick, 0),
                   Sample("strat_out->gw_in", out_, (gw_in.tsc - out_.tsc) * kNsPerTick, 4),
                   Sample("gw_in->gw_sent", gw_in, (sent.tsc - gw_in.tsc) * kNsPerTick, 0),
                   Sample("total", rx, *child.order.total_ns, 4)};
  child.order.stamps = {out_, gw_in, sent};
  child.order.SetFirstTscFromStamps();
  out->push_back(std::move(tick));
  out->push_back(std::move(child));
}

// Order `i` of the two-stamp shape.
FinishedOrder TwoStampOrder(uint64_t i, double records_per_s, std::mt19937_64& rng) {
  std::lognormal_distribution<double> hop(7.5, 0.5);  // ~1800 ticks, ~0.9 us
  const uint64_t thread = i % 4;
  const double ticks_apart = 2.0 * 1e9 / records_per_s / kNsPerTick;
  const uint64_t t0 = 1'000'000 + static_cast<uint64_t>(static_cast<double>(i) * ticks_apart);
  const auto process = static_cast<uint32_t>(1 + thread / 2);
  const auto tid = static_cast<uint32_t>(1000 + thread);
  const int cpu = static_cast<int>(thread);
  const StampDetail rx = Stamp("rx", process, tid, cpu, t0);
  const StampDetail tx =
      Stamp("tx", process, tid, cpu, t0 + static_cast<uint64_t>(hop(rng)));
  FinishedOrder f;
  f.order.order_id = ((thread + 1) << 40) + i / 4 + 1;
  f.order.first_utc_ns = rx.utc_ns;
  f.order.complete = true;
  const double latency = static_cast<double>(tx.tsc - rx.tsc) * kNsPerTick;
  f.order.total_ns = latency;
  f.order.samples = {Sample("rx->tx", rx, latency, 0), Sample("total", rx, latency, 0)};
  f.order.stamps = {rx, tx};
  f.order.SetFirstTscFromStamps();
  return f;
}

struct Result {
  double seconds = 0;
  double file_bytes = 0;
  double writer_cpu_s = 0;    // the sink's writer thread, inside the backend
  double analysis_cpu_s = 0;  // this thread: the sink's per-order work
  double server_cpu_s = 0;    // ClickHouse: the server's CPU meanwhile
};

// The writers alone (the sink's batches replayed straight into each
// backend): a figure line and its TARGET line; "not measured" when the
// ClickHouse run did not happen (no division by its zero time).
void PrintWriterAlone(double samples, const Result& ch_alone, const Result& sqlite_alone) {
  const double sqlite_rate = samples / sqlite_alone.seconds / 1e6;
  if (ch_alone.seconds <= 0 || ch_alone.writer_cpu_s <= 0) {
    std::printf("TARGET|store|samples into ClickHouse, --detail all, the writer alone (the sink's "
                "batches replayed; store_write_bench, wall)|not measured|>= 2 M samples/s|"
                "**missed**|SQLite's writer alone: %.2f M samples/s\n",
                sqlite_rate);
    return;
  }
  const double alone_rate = samples / ch_alone.seconds / 1e6;
  std::printf("writer alone: clickhouse %6.2f M samples/s wall  %6.2f M/s per writer CPU-s  %6.2f "
              "M/s per writer+server CPU-s  (sqlite alone: %.2f M samples/s wall)\n",
              alone_rate, samples / ch_alone.writer_cpu_s / 1e6,
              samples / (ch_alone.writer_cpu_s + ch_alone.server_cpu_s) / 1e6, sqlite_rate);
  std::printf("TARGET|store|samples into ClickHouse, --detail all, the writer alone (the sink's "
              "batches replayed; store_write_bench, wall)|%.2f M samples/s|>= 2 M samples/s|%s|"
              "SQLite's writer alone: %.2f M samples/s; ClickHouse writer thread: %.2f M samples "
              "per CPU-second\n",
              alone_rate, alone_rate >= 2 ? "met" : "**missed**", sqlite_rate,
              samples / ch_alone.writer_cpu_s / 1e6);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Through the sink into `writer` (SQLite or ClickHouse); file_bytes is
// filled in by the caller.
size_t g_orders_per_batch = 20000;  // the sink's default (collector's too)

Result RunSink(store::Writer* writer, store::DetailPolicy policy,
               const std::vector<FinishedOrder>& orders) {
  store::RunMeta meta;
  meta.session = "bench";
  meta.tsc_hz = 1e9 / kNsPerTick;
  meta.detail = policy;
  absl::StatusOr<int64_t> run = writer->BeginRun(meta);
  if (!run.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n", std::string(run.status().message()).c_str());
    std::exit(1);
  }
  ticktrace::collect::StoreSinkOptions o;
  o.block_when_full = true;
  o.detail = policy;
  o.max_orders_per_transaction = g_orders_per_batch;
  ticktrace::collect::StoreSink sink(writer, *run, o);
  std::vector<FinishedOrder> copy = orders;  // moved into the sink, outside the timing
  const auto start = std::chrono::steady_clock::now();
  const double cpu0 = ThreadCpuSeconds();
  sink.Start();
  for (FinishedOrder& f : copy) sink.OnFinishedOrder(std::move(f));
  sink.Submit();
  const double analysis_cpu_s = ThreadCpuSeconds() - cpu0;
  absl::Status s = sink.Stop();
  const double writer_cpu_s = static_cast<double>(sink.counters().writer_cpu_ns) * 1e-9;
  if (s.ok()) s = writer->EndRun(*run, kT0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n", std::string(s.message()).c_str());
    std::exit(1);
  }
  return {seconds, 0, writer_cpu_s, analysis_cpu_s};
}

Result RunOnce(const std::string& path, store::DetailPolicy policy,
               const std::vector<FinishedOrder>& orders) {
  ::unlink(path.c_str());
  auto writer = store::SqliteWriter::OpenOrCreate(path);
  if (!writer.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n", std::string(writer.status().message()).c_str());
    std::exit(1);
  }
  Result r = RunSink(writer->get(), policy, orders);
  writer->reset();
  // The store's files after a clean close (the WAL checkpointed into the
  // database by the last connection; its -wal and -shm counted if left).
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st {};
    if (::stat((path + suffix).c_str(), &st) == 0) r.file_bytes += static_cast<double>(st.st_size);
  }
  return r;
}

// CPU seconds (user + system) of the processes whose command line holds
// `needle` (the ClickHouse server started from the fixture's directory).
double ProcessCpuSeconds(const std::string& needle) {
  double total = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd("/proc/" + pid + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) == std::string::npos) continue;
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::strtod(field.c_str(), nullptr);
      if (i == 15) stime = std::strtod(field.c_str(), nullptr);
    }
    total += (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return total;
}


// Keeps every Write() the sink makes (copies), writes nothing: the batches
// the store sink hands a backend, to feed a backend alone (ReplayBatches).
class RecordingWriter : public store::Writer {
 public:
  struct Batch {
    std::vector<store::IntervalDelta> intervals;
    std::vector<store::IntervalOrders> interval_orders;
    std::vector<store::OrderDetail> orders;
    std::optional<store::Snapshot> snapshot;
  };
  absl::StatusOr<int64_t> BeginRun(const store::RunMeta&) override { return 1; }
  absl::StatusOr<store::RunState> LookupRun(int64_t) override { return store::RunState{}; }
  absl::StatusOr<int64_t> ResumeRun(int64_t) override { return 1; }
  absl::Status Write(int64_t, const std::vector<store::IntervalDelta>& intervals,
                     const std::vector<store::IntervalOrders>& interval_orders,
                     const std::vector<store::OrderDetail>& orders,
                     const store::Snapshot* snapshot, uint64_t*) override {
    Batch b{intervals, interval_orders, orders, std::nullopt};
    if (snapshot != nullptr) b.snapshot = *snapshot;
    batches.push_back(std::move(b));
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> ApplyRetention(int64_t, std::optional<int64_t>, uint64_t,
                                          std::optional<int64_t>) override {
    return 0;
  }
  absl::Status EndRun(int64_t, int64_t) override { return absl::OkStatus(); }
  const std::string& location() const override { return location_; }
  std::vector<Batch> batches;

 private:
  std::string location_ = "recording";
};

// The recorded batches straight into `writer` on this thread (no sink, no
// analysis): what the backend's writer alone takes. writer_cpu_s: this
// thread's CPU (encoding and the HTTP/SQLite calls).
Result ReplayBatches(store::Writer* writer, const std::vector<RecordingWriter::Batch>& batches) {
  store::RunMeta meta;
  meta.session = "bench-writer-alone";
  meta.tsc_hz = 1e9 / kNsPerTick;
  absl::StatusOr<int64_t> run = writer->BeginRun(meta);
  if (!run.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n", std::string(run.status().message()).c_str());
    std::exit(1);
  }
  const auto start = std::chrono::steady_clock::now();
  const double cpu0 = ThreadCpuSeconds();
  absl::Status s;
  for (const RecordingWriter::Batch& b : batches) {
    uint64_t already = 0;
    s = writer->Write(*run, b.intervals, b.interval_orders, b.orders,
                      b.snapshot.has_value() ? &*b.snapshot : nullptr, &already);
    if (!s.ok()) break;
  }
  if (s.ok()) s = writer->EndRun(*run, kT0);
  Result r;
  r.writer_cpu_s = ThreadCpuSeconds() - cpu0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n", std::string(s.message()).c_str());
    std::exit(1);
  }
  return r;
}

// The same into a ClickHouse server of its own; nullopt (with `why`) when
// there is none. file_bytes: the database's active parts after merging.
std::optional<Result> RunClickHouse(const std::vector<FinishedOrder>& orders,
                                    const std::vector<RecordingWriter::Batch>& batches,
                                    Result* alone, std::string* why) {
  using ticktrace::testing::ClickHouseServer;
  if (std::optional<std::string> skip = ClickHouseServer::SkipReason()) {
    *why = *skip;
    return std::nullopt;
  }
  absl::StatusOr<std::unique_ptr<ClickHouseServer>> ch = ClickHouseServer::Start();
  if (!ch.ok()) {
    *why = std::string(ch.status().message());
    return std::nullopt;
  }
  // A writer into `database` on the server; null (and `why`) when it does not open.
  auto open_writer = [&](const char* database) -> std::unique_ptr<store::ClickHouseWriter> {
    store::ClickHouseOptions o;
    o.http.port = (*ch)->http_port();
    o.database = database;
    absl::StatusOr<std::unique_ptr<store::ClickHouseWriter>> w = store::ClickHouseWriter::Open(o);
    if (!w.ok()) {
      *why = std::string(w.status().message());
      return nullptr;
    }
    return *std::move(w);
  };
  const std::unique_ptr<store::ClickHouseWriter> writer = open_writer("bench");
  if (writer == nullptr) return std::nullopt;
  const double server_cpu0 = ProcessCpuSeconds((*ch)->dir());
  Result r = RunSink(writer.get(), store::DetailPolicy::kAll, orders);
  r.server_cpu_s = ProcessCpuSeconds((*ch)->dir()) - server_cpu0;
  // The writer alone: the same batches, recorded from the sink, into a
  // database of their own on the same server.
  const std::unique_ptr<store::ClickHouseWriter> alone_writer = open_writer("bench_alone");
  if (alone_writer == nullptr) return std::nullopt;
  const double alone_cpu0 = ProcessCpuSeconds((*ch)->dir());
  *alone = ReplayBatches(alone_writer.get(), batches);
  alone->server_cpu_s = ProcessCpuSeconds((*ch)->dir()) - alone_cpu0;
  for (const char* t : {"orders", "intervals", "interval_detail", "batches", "counters"}) {
    (*ch)->Query(std::string("OPTIMIZE TABLE bench.") + t + " FINAL").IgnoreError();
  }
  absl::StatusOr<std::string> bytes = (*ch)->Query(
      "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = 'bench'");
  r.file_bytes = bytes.ok() ? std::strtod(bytes->c_str(), nullptr) : 0;
  return r;
}

struct Options {
  uint64_t pairs = 500'000;  // --orders / 2: a tick and its child order each
  std::string dir = "/tmp";
  bool clickhouse = true;
  bool two_stamp = false;
  double records_per_s = 500'000;  // --rate, the two-stamp shape's
};
bool g_breakdown = false;  // --breakdown

// The lines of --breakdown for the store at `path` (`records` in it).
void PrintBreakdown(const std::string& path, double records) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::printf("breakdown: cannot open %s\n", path.c_str());
    sqlite3_close(db);
    return;
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat "
                         "GROUP BY name ORDER BY sum(pgsize) DESC",
                         -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::printf("breakdown: %-40s %10.1f KB pages  %6.2f B/record  (payload %.1f KB, unused %.1f KB)\n",
                  reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                  sqlite3_column_double(s, 1) / 1e3, sqlite3_column_double(s, 1) / records,
                  sqlite3_column_double(s, 2) / 1e3, sqlite3_column_double(s, 3) / 1e3);
    }
  } else {
    std::printf("breakdown: no dbstat in this SQLite (%s)\n", sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  double stored = 0, old_json = 0, old_detail = 0, blocks = 0;
  if (sqlite3_prepare_v2(db, "SELECT orders, detail FROM order_blocks", -1, &s, nullptr) ==
      SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      const std::string_view orders(static_cast<const char*>(sqlite3_column_blob(s, 0)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 0)));
      const std::string_view detail(static_cast<const char*>(sqlite3_column_blob(s, 1)),
                                    static_cast<size_t>(sqlite3_column_bytes(s, 1)));
      ++blocks;
      stored += static_cast<double>(orders.size() + detail.size());
      absl::StatusOr<std::string> json = store::BlockOrdersJson(orders);
      absl::StatusOr<std::vector<std::string>> details = store::BlockDetails(orders, detail);
      if (json.ok()) old_json += static_cast<double>(json->size());
      if (details.ok()) {
        for (const std::string& d : *details) old_detail += static_cast<double>(d.size());
      }
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  std::printf("breakdown: order blocks %.0f, payload as stored %.2f B/record; the older encoding "
              "of the same orders: %.2f B/record (JSON %.2f + packed details %.2f)\n",
              blocks, stored / records, (old_json + old_detail) / records, old_json / records,
              old_detail / records);
}

// Reads the flags into `o`, and --orders-per-batch into g_orders_per_batch
// (the sink's setting, for both backends). Prints the usage line and returns
// false (main exits 2) on anything else.
bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--orders") == 0 && i + 1 < argc) {
      o->pairs = std::strtoull(argv[++i], nullptr, 10) / 2;
    } else if (std::strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      o->dir = argv[++i];
    } else if (std::strcmp(argv[i], "--orders-per-batch") == 0 && i + 1 < argc) {
      g_orders_per_batch = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--no-clickhouse") == 0) {
      o->clickhouse = false;
    } else if (std::strcmp(argv[i], "--rate") == 0 && i + 1 < argc &&
               std::strtod(argv[i + 1], nullptr) >= 1) {
      o->records_per_s = std::strtod(argv[++i], nullptr);
    } else if (std::strcmp(argv[i], "--breakdown") == 0) {
      g_breakdown = true;
    } else if (std::strcmp(argv[i], "--shape") == 0 && i + 1 < argc &&
               (std::strcmp(argv[i + 1], "demo") == 0 ||
                std::strcmp(argv[i + 1], "two-stamp") == 0)) {
      o->two_stamp = std::strcmp(argv[++i], "two-stamp") == 0;
    } else {
      std::fprintf(stderr, "usage: store_write_bench [--orders N] [--dir DIR] [--orders-per-batch N] "
                           "[--no-clickhouse] [--shape demo|two-stamp] [--rate RECORDS_PER_S] [--breakdown]\n");
      return false;
    }
  }
  return true;
}

// The orders through the sink into SQLite at `path`, once per detail policy
// (all, tail, none), a line each; the file is removed afterwards.
std::array<Result, 3> RunEveryPolicy(const std::string& path,
                                     const std::vector<FinishedOrder>& orders, double samples,
                                     double records) {
  std::array<Result, 3> by_policy;
  int i = 0;
  for (store::DetailPolicy p :
       {store::DetailPolicy::kAll, store::DetailPolicy::kTail, store::DetailPolicy::kNone}) {
    const Result r = RunOnce(path, p, orders);
    by_policy[i++] = r;
    if (g_breakdown && p == store::DetailPolicy::kAll) PrintBreakdown(path, records);
    // Per CPU-second of each thread: what it sustains with a core to itself
    // (the wall rate drops when the machine is shared).
    std::printf("detail %-4s  %6.2f M samples/s wall  %6.2f M/s per writer CPU-s  %6.2f M/s per "
                "analysis CPU-s  %7.1f MB  %6.2f B/record\n",
                std::string(store::DetailPolicyName(p)).c_str(), samples / r.seconds / 1e6,
                r.writer_cpu_s > 0 ? samples / r.writer_cpu_s / 1e6 : 0.0,
                samples / r.analysis_cpu_s / 1e6, r.file_bytes / 1e6, r.file_bytes / records);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  return by_policy;
}

// Lines for bench/run_all.sh: the store's targets (bytes per record, samples/s).
void PrintSqliteTargets(const std::array<Result, 3>& by_policy, double samples, double records) {
  const double all_bytes = by_policy[0].file_bytes / records;
  const double tail_bytes = by_policy[1].file_bytes / records;
  const double writer_rate = samples / by_policy[0].writer_cpu_s / 1e6;
  const double wall_rate = samples / by_policy[0].seconds / 1e6;
  std::printf("TARGET|store|bytes per record on disk, --detail all, demo shape (store_write_bench)|"
              "%.1f B|<= 24 B|%s|%.1f MB for %.0f records\n",
              all_bytes, all_bytes <= 24 ? "met" : "**missed**", by_policy[0].file_bytes / 1e6,
              records);
  std::printf("TARGET|store|bytes per record on disk, --detail tail, demo shape "
              "(store_write_bench)|%.2f B|<= 2 B|%s|\n",
              tail_bytes, tail_bytes <= 2 ? "met" : "**missed**");
  std::printf("TARGET|store|samples into SQLite, --detail all, through the store sink "
              "(store_write_bench, wall)|%.2f M samples/s|>= 1.5 M samples/s|%s|writer thread "
              "alone: %.2f M samples per CPU-second\n",
              wall_rate, wall_rate >= 1.5 ? "met" : "**missed**", writer_rate);
}

// SQLite's writer alone: the recorded batches replayed into a fresh file at
// `path` (removed afterwards), with a line. Nullopt after saying why the file
// did not open.
std::optional<Result> ReplayIntoSqlite(const std::string& path, const RecordingWriter& recording,
                                       double samples) {
  ::unlink(path.c_str());
  auto writer = store::SqliteWriter::OpenOrCreate(path);
  if (!writer.ok()) {
    std::fprintf(stderr, "store_write_bench: %s\n",
                 std::string(writer.status().message()).c_str());
    return std::nullopt;
  }
  const Result sqlite_alone = ReplayBatches(writer->get(), recording.batches);
  writer->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  std::printf("writer alone (%zu batches of the sink, this thread): sqlite %6.2f M samples/s wall  "
              "%6.2f M/s per writer CPU-s\n",
              recording.batches.size(), samples / sqlite_alone.seconds / 1e6,
              samples / sqlite_alone.writer_cpu_s / 1e6);
  return sqlite_alone;
}

// ClickHouse, same orders, same run of this program: through the sink and
// the writer alone, beside SQLite's figures (`sqlite_wall_rate`: through the
// sink, --detail all), with its TARGET lines; or why it was skipped.
void CompareClickHouse(bool clickhouse, const std::vector<FinishedOrder>& orders,
                       const RecordingWriter& recording, const Result& sqlite_alone,
                       double samples, double records, double sqlite_wall_rate) {
  std::string why = "--no-clickhouse";
  Result ch_alone;
  std::optional<Result> ch =
      clickhouse ? RunClickHouse(orders, recording.batches, &ch_alone, &why) : std::nullopt;
  if (!ch.has_value()) {
    std::printf("clickhouse   skipped: %s\n", why.c_str());
    PrintWriterAlone(samples, ch_alone, sqlite_alone);
    std::printf("TARGET|store|samples into ClickHouse, --detail all, through the store sink "
                "(store_write_bench, wall)|not measured|>= 2 M samples/s|**missed**|skipped: %s\n",
                why.c_str());
    return;
  }
  const double ch_rate = samples / ch->seconds / 1e6;
  const double ch_cpu_rate = samples / (ch->writer_cpu_s + ch->server_cpu_s) / 1e6;
  std::printf("clickhouse   %6.2f M samples/s wall  %6.2f M/s per writer CPU-s  %6.2f M/s per "
              "writer+server CPU-s  %7.1f MB  %6.2f B/record  (SQLite, same orders: %.2f M "
              "samples/s wall)\n",
              ch_rate, ch->writer_cpu_s > 0 ? samples / ch->writer_cpu_s / 1e6 : 0.0, ch_cpu_rate,
              ch->file_bytes / 1e6, ch->file_bytes / records, sqlite_wall_rate);
  PrintWriterAlone(samples, ch_alone, sqlite_alone);
  std::printf("TARGET|store|samples into ClickHouse, --detail all, through the store sink "
              "(store_write_bench, wall)|%.2f M samples/s|>= 2 M samples/s|%s|SQLite in the same "
              "run: %.2f M samples/s; writer thread + server: %.2f M samples per CPU-second; %.1f "
              "B/record on disk after merges\n",
              ch_rate, ch_rate >= 2 ? "met" : "**missed**", sqlite_wall_rate, ch_cpu_rate,
              ch->file_bytes / records);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  std::mt19937_64 rng(42);
  std::vector<FinishedOrder> orders;
  orders.reserve(2 * o.pairs);
  double samples = 0, records = 0;
  if (o.two_stamp) {
    for (uint64_t i = 0; i < 2 * o.pairs; ++i) orders.push_back(TwoStampOrder(i, o.records_per_s, rng));
    samples = 4.0 * static_cast<double>(o.pairs);  // rx->tx and total per order
    records = 4.0 * static_cast<double>(o.pairs);  // its two stamps
  } else {
    for (uint64_t k = 0; k < o.pairs; ++k) MakePair(k, rng, &orders);
    samples = 8.0 * static_cast<double>(o.pairs);
    records = 8.0 * static_cast<double>(o.pairs);  // 7 stamps + 1 link
  }
  std::printf("store_write_bench: %llu orders (%.0f records, %.0f samples) of the %s shape\n",
              static_cast<unsigned long long>(2 * o.pairs), records, samples,
              o.two_stamp ? "two-stamp" : "demo's");
  if (o.two_stamp) std::printf("two-stamp orders' clock: %.0f records/s\n", o.records_per_s);
  const std::string path = o.dir + "/ticktrace_store_write_bench.db";
  const std::array<Result, 3> by_policy = RunEveryPolicy(path, orders, samples, records);
  // The targets are the demo shape's (bench/bytes_rows.sh judges the two-stamp one).
  if (!o.two_stamp) PrintSqliteTargets(by_policy, samples, records);
  // The backends' writers alone: the sink's batches recorded once, then
  // written by this thread straight into each backend.
  RecordingWriter recording;
  RunSink(&recording, store::DetailPolicy::kAll, orders);
  const std::optional<Result> sqlite_alone = ReplayIntoSqlite(path, recording, samples);
  if (!sqlite_alone) return 1;
  const double wall_rate = samples / by_policy[0].seconds / 1e6;
  CompareClickHouse(o.clickhouse, orders, recording, *sqlite_alone, samples, records, wall_rate);
  return 0;
}
