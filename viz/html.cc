#include "viz/html.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace spmdcheck::viz {

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string DeviceColor(int64_t device) {
  const double hue = std::fmod(static_cast<double>(device) * 137.508, 360.0);
  const int lightness = 70 + static_cast<int>(device % 3) * 6;
  return absl::StrFormat("hsl(%.0f,70%%,%d%%)", hue, lightness);
}

std::string GroupColor(int64_t group) {
  const double hue = std::fmod(static_cast<double>(group) * 137.508 + 20.0, 360.0);
  return absl::StrFormat("hsl(%.0f,60%%,55%%)", hue);
}

namespace {

constexpr char kStyle[] = R"css(
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; } h3 { font-size: 15px; }
code, pre { font-family: ui-monospace, monospace; font-size: 12px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; font-size: 13px; text-align: left; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: bold; }
.holds, .proved-none { background: #c8ecc8; } .fails, .incorrect { background: #f6c1c1; }
.unknown, .unproven { background: #f3e3b3; } .proved { background: #c9dcf6; }
svg text { font-family: ui-monospace, monospace; pointer-events: none; }
.tile rect, .device rect { stroke: #333; stroke-width: 1; }
.lit rect { stroke: #000; stroke-width: 3; }
.note { color: #555; font-size: 13px; }
.finding { border-left: 4px solid #999; padding-left: 12px; margin: 18px 0; }
)css";

// Hovering anything that names devices (data-device / data-devices) outlines every element
// that names one of them.
constexpr char kScript[] = R"js(
(function () {
  function devicesOf(el) {
    var list = el.getAttribute('data-devices') || el.getAttribute('data-device') || '';
    return list.split(' ').filter(function (s) { return s.length > 0; });
  }
  var items = Array.prototype.slice.call(document.querySelectorAll('[data-device],[data-devices]'));
  items.forEach(function (el) {
    el.addEventListener('mouseenter', function () {
      var mine = devicesOf(el);
      items.forEach(function (other) {
        var hit = devicesOf(other).some(function (d) { return mine.indexOf(d) >= 0; });
        other.classList.toggle('lit', hit);
      });
    });
    el.addEventListener('mouseleave', function () {
      items.forEach(function (other) { other.classList.remove('lit'); });
    });
  });
})();
)js";

}  // namespace

std::string Page(absl::string_view title, absl::string_view body) {
  return absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                      "<title>", Escape(title), "</title>\n<style>", kStyle,
                      "</style>\n</head>\n<body>\n", body, "\n<script>", kScript,
                      "</script>\n</body>\n</html>\n");
}

}  // namespace spmdcheck::viz
