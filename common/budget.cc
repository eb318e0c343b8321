#include "common/budget.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/duration.h"

namespace ticktrace {
namespace {

absl::Status Bad(absl::string_view source, absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(source, " '", text, "': ", why));
}

// "p99.9" -> Q = 99.9 and the samples its rank needs: 1 / (1 - Q/100) =
// 100 / (100 - Q), rounded up (less a hair, so that 99.9's binary rounding
// does not make 1000 into 1001).
bool ParseQuantile(absl::string_view stat, double* quantile, int64_t* min_samples) {
  if (stat.size() < 2 || stat[0] != 'p') return false;
  const absl::string_view digits = stat.substr(1);
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  double q = 0;
  if (!absl::SimpleAtod(digits, &q) || !(q > 0) || !(q < 100)) return false;
  // Q / 100 read from its decimal digits ("99.99" -> "0.9999"), so that the
  // quantile is the double nearest the decimal written, not q / 100's rounding.
  const size_t dot = digits.find('.');
  std::string whole(digits.substr(0, dot));
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size()));
  whole.insert(0, 2 - std::min<size_t>(whole.size(), 2), '0');
  const std::string fraction(dot == absl::string_view::npos ? "" : digits.substr(dot + 1));
  if (!absl::SimpleAtod(absl::StrCat("0.", whole, fraction), quantile)) return false;
  *min_samples = static_cast<int64_t>(std::ceil(100 / (100 - q) - 1e-6));
  return true;
}

}  // namespace

absl::string_view BudgetVerdictName(BudgetVerdict verdict) {
  switch (verdict) {
    case BudgetVerdict::kOk:
      return "OK";
    case BudgetVerdict::kBreach:
      return "BREACH";
    case BudgetVerdict::kNotEnoughSamples:
      return "not enough samples";
  }
  return "?";
}

BudgetVerdict JudgeBudget(const Budget& budget, std::optional<double> measured_ns,
                          int64_t samples) {
  if (!measured_ns.has_value() || samples < budget.min_samples) {
    return BudgetVerdict::kNotEnoughSamples;
  }
  const double limit = static_cast<double>(budget.limit_ns);
  const bool within = budget.limit_passes ? *measured_ns <= limit : *measured_ns < limit;
  return within ? BudgetVerdict::kOk : BudgetVerdict::kBreach;
}

absl::StatusOr<Budget> ParseBudget(absl::string_view source, absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  Budget b;
  b.text = std::string(text);
  const size_t less = text.find('<');
  if (less == absl::string_view::npos) {
    return Bad(source, text, "expected STAGE:STAT<LIMIT, e.g. decide:p99<20us");
  }
  const absl::string_view left = text.substr(0, less);
  absl::string_view limit = text.substr(less + 1);
  if (!limit.empty() && limit[0] == '=') {
    b.limit_passes = true;
    limit.remove_prefix(1);
  }
  const size_t colon = left.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return Bad(source, text, "expected STAGE:STAT<LIMIT, e.g. decide:p99<20us");
  }
  b.stage = std::string(absl::StripAsciiWhitespace(left.substr(0, colon)));
  b.stat = std::string(absl::StripAsciiWhitespace(left.substr(colon + 1)));
  if (b.stage.empty()) return Bad(source, text, "no stage before ':'");
  if (b.stat != "max") {
    double q = 0;
    if (!ParseQuantile(b.stat, &q, &b.min_samples)) {
      return Bad(source, text,
                 absl::StrCat("'", b.stat, "' is not a statistic: max, or pQ with 0 < Q < 100 "
                              "(p50, p99, p99.9)"));
    }
    b.quantile = q;
  }
  limit = absl::StripAsciiWhitespace(limit);
  absl::StatusOr<int64_t> ns = ParseDurationNs("limit", limit);
  if (!ns.ok()) return Bad(source, text, ns.status().message());
  b.limit_ns = *ns;
  return b;
}

absl::StatusOr<std::vector<Budget>> ParseBudgetLines(absl::string_view path,
                                                     absl::string_view contents) {
  std::vector<Budget> budgets;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<Budget> b = ParseBudget(absl::StrCat(path, ":", line_number), line);
    if (!b.ok()) return b.status();
    if (absl::Status s = AddBudgets({*std::move(b)}, &budgets); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": ", s.message()));
    }
  }
  return budgets;
}

absl::StatusOr<std::vector<Budget>> ReadBudgetFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the budget file"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(absl::StrCat(path, ": cannot read the budget file"));
  return ParseBudgetLines(path, contents.str());
}

absl::Status AddBudgets(std::vector<Budget> more, std::vector<Budget>* budgets) {
  for (Budget& b : more) {
    for (const Budget& have : *budgets) {
      if (have.stage == b.stage && have.quantile == b.quantile) {
        return absl::InvalidArgumentError(absl::StrCat("budget '", b.text, "' budgets ", b.stage,
                                                       ":", b.stat, " again (after '",
                                                       have.text, "'); give one limit"));
      }
    }
    budgets->push_back(std::move(b));
  }
  return absl::OkStatus();
}

}  // namespace ticktrace
