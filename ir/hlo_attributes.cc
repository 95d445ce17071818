#include "ir/hlo_attributes.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck {

std::string SliceToString(const std::vector<SliceDim>& slice) {
  std::vector<std::string> parts;
  for (const SliceDim& d : slice) {
    parts.push_back(d.stride == 1 ? absl::StrCat("[", d.start, ":", d.limit, "]")
                                  : absl::StrCat("[", d.start, ":", d.limit, ":", d.stride, "]"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

std::string PaddingToString(const std::vector<PadDim>& padding) {
  std::vector<std::string> parts;
  for (const PadDim& d : padding) {
    parts.push_back(d.interior == 0 ? absl::StrCat(d.low, "_", d.high)
                                    : absl::StrCat(d.low, "_", d.high, "_", d.interior));
  }
  return absl::StrJoin(parts, "x");
}

std::string WindowToString(const std::vector<WindowDim>& window) {
  auto join = [&](auto field) {
    std::vector<std::string> parts;
    for (const WindowDim& d : window) parts.push_back(field(d));
    return absl::StrJoin(parts, "x");
  };
  bool any_stride = false, any_pad = false, any_lhs = false, any_rhs = false, any_rev = false;
  for (const WindowDim& d : window) {
    any_stride |= d.stride != 1;
    any_pad |= d.pad_low != 0 || d.pad_high != 0;
    any_lhs |= d.lhs_dilation != 1;
    any_rhs |= d.rhs_dilation != 1;
    any_rev |= d.reversal;
  }
  std::string out = "{";
  if (!window.empty()) {
    absl::StrAppend(&out, "size=", join([](const WindowDim& d) { return absl::StrCat(d.size); }));
  }
  if (any_stride) {
    absl::StrAppend(&out,
                    " stride=", join([](const WindowDim& d) { return absl::StrCat(d.stride); }));
  }
  if (any_pad) {
    absl::StrAppend(&out, " pad=", join([](const WindowDim& d) {
      return absl::StrCat(d.pad_low, "_", d.pad_high);
    }));
  }
  if (any_lhs) {
    absl::StrAppend(&out, " lhs_dilate=", join([](const WindowDim& d) {
      return absl::StrCat(d.lhs_dilation);
    }));
  }
  if (any_rhs) {
    absl::StrAppend(&out, " rhs_dilate=", join([](const WindowDim& d) {
      return absl::StrCat(d.rhs_dilation);
    }));
  }
  if (any_rev) {
    absl::StrAppend(&out, " rhs_reversal=", join([](const WindowDim& d) {
      return absl::StrCat(d.reversal ? 1 : 0);
    }));
  }
  return out + "}";
}

namespace {
constexpr std::array<absl::string_view, 6> kDirectionNames = {"EQ", "NE", "LT", "LE", "GT", "GE"};

std::string Labels(int64_t rank, int64_t first, char first_char, int64_t second, char second_char,
                   const std::vector<int64_t>& spatial) {
  std::string out(static_cast<size_t>(rank), '?');
  if (first >= 0 && first < rank) out[first] = first_char;
  if (second >= 0 && second < rank) out[second] = second_char;
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (spatial[i] >= 0 && spatial[i] < rank) out[spatial[i]] = static_cast<char>('0' + i);
  }
  return out;
}
}  // namespace

absl::string_view ComparisonDirectionName(ComparisonDirection direction) {
  return kDirectionNames[static_cast<size_t>(direction)];
}

std::optional<ComparisonDirection> ComparisonDirectionFromName(absl::string_view name) {
  for (size_t i = 0; i < kDirectionNames.size(); ++i) {
    if (kDirectionNames[i] == name) return static_cast<ComparisonDirection>(i);
  }
  return std::nullopt;
}

std::string DimLabelsToString(const ConvolutionDimensionNumbers& d) {
  const int64_t rank = 2 + static_cast<int64_t>(d.input_spatial.size());
  return absl::StrCat(
      Labels(rank, d.input_batch, 'b', d.input_feature, 'f', d.input_spatial), "_",
      Labels(rank, d.kernel_input_feature, 'i', d.kernel_output_feature, 'o', d.kernel_spatial),
      "->", Labels(rank, d.output_batch, 'b', d.output_feature, 'f', d.output_spatial));
}

}  // namespace spmdcheck
